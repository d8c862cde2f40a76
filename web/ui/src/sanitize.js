// The one door for HTML into the page. Every HTML string that reaches the
// DOM — prose the server rendered with goldmark, prose rendered here with
// marked after an edit, HTML outputs saved in a notebook — goes through
// DOMPurify here, because notebooks come from anyone. The page's
// Content-Security-Policy (web/server.go) forbids inline script as a second
// line of defence.
import DOMPurify from "dompurify";

const CONFIG = {
  USE_PROFILES: { html: true }, // no SVG or MathML
  FORBID_TAGS: ["style", "form", "input", "button", "textarea", "select", "iframe", "object", "embed", "base", "meta", "link"],
  FORBID_ATTR: ["style", "srcset", "action", "formaction"],
  ALLOW_DATA_ATTR: false,
};

// Links in prose open in a new tab without giving it this window.
DOMPurify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href") && !node.getAttribute("href").startsWith("#")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

// sanitize returns html with everything that could run script removed.
export function sanitize(html) {
  return DOMPurify.sanitize(String(html ?? ""), CONFIG);
}

// setHTML replaces el's children with the sanitised html.
export function setHTML(el, html) {
  el.replaceChildren(DOMPurify.sanitize(String(html ?? ""), { ...CONFIG, RETURN_DOM_FRAGMENT: true }));
}
