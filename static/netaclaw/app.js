/* NetaClaw: what every page does (ES module, no framework, no external assets): the
 * language select submits itself, a skip link focuses its target, and the top bar folds
 * into a menu on narrow screens. Pages load their own modules besides: chat.js (the chat
 * page), chat-list.js (the chat list), forms.js (agent and channel forms), copy.js. */
import { all, byId, setPanelOpen, targetOf } from "./dom.js";

// The language select submits itself (the <noscript> button covers browsers without script).
// This module runs once the page is parsed: a choice made before that is sent now (the select
// has autocomplete="off", so only the user changes it from the option the server marked).
function isAutosubmit(el) {
  return el instanceof HTMLSelectElement && el.hasAttribute("data-autosubmit");
}

document.addEventListener("change", (event) => {
  if (isAutosubmit(event.target)) event.target.form.submit();
});

all("select[data-autosubmit]").forEach((select) => {
  const marked = Array.from(select.options).find((option) => option.defaultSelected);
  if (marked && select.value !== marked.value) select.form.submit();
});

function menuOpen(menu) {
  return Boolean(menu && menu.classList.contains("is-open"));
}

document.addEventListener("click", (event) => {
  const target = targetOf(event);
  if (!target) return;
  const menu = byId("topbar-menu");
  if (menuOpen(menu) && !target.closest("#topbar-menu, [data-menu-toggle]")) {
    setPanelOpen(menu, false); // a click elsewhere folds the menu
  }
  const skip = target.closest(".skip-link");
  if (skip) {
    // focus the target itself: the message box, not just the scroll position
    const goal = byId((skip.getAttribute("href") || "").slice(1));
    if (goal) {
      event.preventDefault();
      goal.focus();
    }
    return;
  }
  const toggle = target.closest("[data-menu-toggle]");
  if (toggle) {
    const panel = byId(toggle.getAttribute("aria-controls"));
    if (panel) setPanelOpen(panel, !menuOpen(panel));
  }
});

document.addEventListener(
  "keydown",
  (event) => {
    const menu = byId("topbar-menu");
    if (event.key !== "Escape" || !menuOpen(menu)) return;
    setPanelOpen(menu, false);
    const toggle = byId("menu-toggle");
    if (toggle) toggle.focus();
  },
  true
);
