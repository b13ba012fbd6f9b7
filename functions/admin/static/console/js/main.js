// Entry point: read config.json, start i18n, render the console into #app.
import { html, render } from "./lib.js";
import { startI18n } from "./i18n.js";
import { App } from "./app.js";

async function loadConfig() {
  try {
    const response = await fetch("config.json", { cache: "no-cache" });
    return response.ok ? await response.json() : {};
  } catch {
    return {};
  }
}

const [config] = await Promise.all([loadConfig(), startI18n()]);
const root = document.getElementById("app");
root.replaceChildren();
render(html`<${App} config=${config} />`, root);
