/* Scrolling: the page follows the conversation while the reader is at its end, and
 * "Load earlier messages" keeps the reading position. */
import { byId, nearBottom } from "../dom.js";

let stickToBottom = true;
let heightBeforeLoad = null;

export function toBottom() {
  const el = byId("scroller");
  if (el) el.scrollTop = el.scrollHeight;
}

/** A search result opened the chat (``?message=<id>``): that message, centred and marked,
 * and the page stops following the end until the reader goes back there. */
export function toFound() {
  const chat = byId("chat");
  const id = chat && chat.getAttribute("data-found-message");
  const found = id ? byId(`msg-${id}`) : null;
  if (!found) return false;
  found.classList.add("is-found");
  found.scrollIntoView({ block: "center" });
  stickToBottom = false;
  return true;
}

/** The user sent something: show its end, and follow it. */
export function follow() {
  stickToBottom = true;
  toBottom();
}

/** htmx:wsBeforeMessage: whether the reader is at the end before the frame is swapped in. */
export function beforeMessage() {
  const el = byId("scroller");
  stickToBottom = el ? nearBottom(el) : true;
}

/** htmx:wsAfterMessage */
export function afterMessage() {
  if (stickToBottom) toBottom();
}

/** htmx:beforeSwap: earlier messages are about to go in above what is read. */
export function beforeSwap(target) {
  if (!target || target.id !== "load-earlier") return;
  const el = byId("scroller");
  heightBeforeLoad = el ? el.scrollHeight - el.scrollTop : null;
}

/** htmx:afterSettle */
export function afterSettle() {
  if (heightBeforeLoad === null) return;
  const el = byId("scroller");
  if (el) el.scrollTop = el.scrollHeight - heightBeforeLoad;
  heightBeforeLoad = null;
}
