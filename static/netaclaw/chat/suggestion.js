/* The ask-mode callout (#compaction-suggestion, issue 17 item 4): compact now, reveal the
 * instructions field, or "Not now"; it goes once one of its forms has sent. */
import { byId } from "../dom.js";

function clear() {
  const slot = byId("compaction-suggestion");
  if (slot) slot.replaceChildren();
}

function reveal(button) {
  const form = byId(button.getAttribute("aria-controls"));
  if (!form) return;
  form.hidden = false;
  button.setAttribute("aria-expanded", "true");
  const field = form.querySelector("textarea");
  if (field) field.focus();
}

/** htmx:wsConfigSend of one of its forms: it goes once the frame is on its way. */
export function sent() {
  setTimeout(clear, 0);
}

/** click */
export function click(target) {
  const button = target.closest("[data-suggest-instructions]");
  if (button) reveal(button);
  else if (target.closest("[data-suggest-dismiss]")) clear();
}
