// The console's only view library: Preact (components, hooks) with htm's tagged templates, both
// vendored (vendor/vendor.json). No eval, no innerHTML: every interpolated value renders as text.
import { h, render, Fragment } from "../vendor/preact.mjs";
import { useState, useEffect, useCallback, useMemo, useRef } from "../vendor/hooks.mjs";
import htm from "../vendor/htm.mjs";

export const html = htm.bind(h);
export { render, Fragment, useState, useEffect, useCallback, useMemo, useRef };

// The page's Content-Security-Policy requires Trusted Types for script URLs and allows one policy,
// "console", which admits only the vendored classic scripts below; nothing else can become script.
const SCRIPTS = ["vendor/chart.umd.min.js", "vendor/oidc-client-ts.min.js"];
const policy = window.trustedTypes?.createPolicy("console", {
  createScriptURL: (url) => {
    if (!SCRIPTS.includes(url)) throw new TypeError(`not a vendored script: ${url}`);
    return url;
  },
}) ?? { createScriptURL: (url) => url };

/** Load a vendored classic script once (Chart.js, oidc-client-ts: UMD builds that set a global). */
const loading = new Map();
export function loadScript(src) {
  if (!loading.has(src)) {
    loading.set(src, new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = policy.createScriptURL(src);
      script.onload = () => resolve();
      script.onerror = () => reject(new Error(`could not load ${src}`));
      document.head.append(script);
    }));
  }
  return loading.get(src);
}
