/* The "Context" button's panel (issue 17 item 11): what fills the window. The socket
 * replaces only its figures (#context-breakdown), so it stays open; Esc, its close button or
 * a click elsewhere closes it. */
import { byId } from "../dom.js";

function setOpen(open, focusBack) {
  const panel = byId("context-panel");
  const toggle = byId("context-toggle");
  if (!panel || !toggle) return;
  panel.hidden = !open;
  toggle.setAttribute("aria-expanded", open ? "true" : "false");
  if (!open && focusBack) toggle.focus();
}

function isOpen() {
  const panel = byId("context-panel");
  return !!panel && !panel.hidden;
}

/** Esc: close it, focus back on its button. Whether it was open. */
export function closeOpen() {
  if (!isOpen()) return false;
  setOpen(false, true);
  return true;
}

/** click: whether the click was the panel's own (its button or its close button). */
export function click(target) {
  if (target.closest("[data-context-toggle]")) {
    setOpen(!isOpen(), false);
    return true;
  }
  if (target.closest("[data-context-close]")) {
    setOpen(false, true);
    return true;
  }
  if (isOpen() && !target.closest("#context-panel")) setOpen(false, false);
  return false;
}
