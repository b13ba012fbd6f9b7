// Language: Chinese or English, detected from the browser (navigator.languages: zh* -> zh, else
// en), switchable, remembered in localStorage ("console.lang"); <html lang> follows (zh-CN / en).
// i18next does the lookups and plurals; the language detector plugin reads and remembers the choice.
import i18next from "../vendor/i18next.js";
import LanguageDetector from "../vendor/i18next-browser-languagedetector.js";

export const LANGUAGES = ["zh", "en"];
export const STORAGE_KEY = "console.lang";
const HTML_LANG = { zh: "zh-CN", en: "en" };

/** The resources of both languages (locales/*.json), fetched once at start. */
async function loadResources() {
  const entries = await Promise.all(LANGUAGES.map(async (lng) => {
    const response = await fetch(`locales/${lng}.json`, { cache: "no-cache" });
    return [lng, { translation: await response.json() }];
  }));
  return Object.fromEntries(entries);
}

/** Start i18next; resolves once the language is chosen and <html lang> set. */
export async function startI18n() {
  i18next.on("languageChanged", () => {
    const lang = currentLanguage();
    document.documentElement.lang = HTML_LANG[lang];
    document.title = i18next.t("app.title");
  });
  await i18next.use(LanguageDetector).init({
    resources: await loadResources(),
    supportedLngs: LANGUAGES,
    nonExplicitSupportedLngs: true,
    load: "languageOnly",
    fallbackLng: "en",
    // Rendering is by text nodes only (never HTML), so values are not HTML-escaped here.
    interpolation: { escapeValue: false },
    detection: {
      order: ["localStorage", "navigator"],
      lookupLocalStorage: STORAGE_KEY,
      caches: ["localStorage"],
    },
  });
  return i18next;
}

/** The current language: "zh" or "en". */
export function currentLanguage() {
  return i18next.resolvedLanguage === "zh" ? "zh" : "en";
}

export const t = (...args) => i18next.t(...args);
export { i18next };
