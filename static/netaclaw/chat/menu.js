/* A message's "⋯" menu (issue 17 items 2 and 8): a <details>, one open at a time; Esc or a
 * click elsewhere closes it. Its Pin / Unpin is an htmx POST (the bubble comes back with its
 * badge); its "Compact up to here" is a ws-send form sending {"type": "compact", "sessionId",
 * "upTo"}, after a confirmation. */
import { all } from "../dom.js";

export function closeAll(except) {
  all("details[data-msg-menu][open]").forEach((menu) => {
    if (menu !== except) menu.open = false;
  });
}

/** toggle (captured: it does not bubble): a menu opening closes the others. */
export function toggled(event) {
  const menu = event.target;
  if (menu instanceof HTMLDetailsElement && menu.hasAttribute("data-msg-menu") && menu.open) {
    closeAll(menu);
  }
}

/** Esc: close the open menu, focus on its toggle. Whether there was one. */
export function closeOpen() {
  const menu = document.querySelector("details[data-msg-menu][open]");
  if (!menu) return false;
  menu.open = false;
  const summary = menu.querySelector("summary");
  if (summary) summary.focus();
  return true;
}

/** htmx:wsConfigSend of "Compact up to here": it asks first. */
export function confirmUpTo(event, form) {
  if (!window.confirm(form.getAttribute("data-confirm"))) {
    event.preventDefault();
    return;
  }
  closeAll(null);
}

// While a Pin / Unpin request runs, the socket's message_updated for the same bubble is not
// swapped in: it would detach the form whose answer is on its way (htmx then finds no target
// for the answer's out-of-band meter). The answer carries the same bubble.
const pinning = {}; // message element id -> the form whose request runs
let pinnedFrom = null; // the message whose Pin / Unpin was pressed: its menu gets the focus back

/** htmx:beforeRequest */
export function beforeRequest(elt) {
  const menu = elt && elt.closest ? elt.closest("details[data-msg-menu]") : null;
  const message = menu ? menu.closest(".msg") : null;
  pinnedFrom = message && message.id ? message.id : null;
  if (pinnedFrom) pinning[pinnedFrom] = elt;
}

/** htmx:afterRequest */
export function afterRequest(elt) {
  Object.keys(pinning).forEach((id) => {
    if (pinning[id] === elt) delete pinning[id];
  });
}

/** htmx:oobBeforeSwap: whether the target's bubble is being pinned (the frame waits). */
export function holds(target) {
  return Boolean(target && target.id && pinning[target.id]);
}

/** htmx:afterSettle: the pinned bubble is back; its menu's toggle takes the focus. */
export function afterSettle(settled) {
  if (!pinnedFrom || !(settled instanceof Element) || settled.id !== pinnedFrom) return;
  const toggle = settled.querySelector(".msg-menu-toggle");
  pinnedFrom = null;
  if (toggle) toggle.focus();
}
