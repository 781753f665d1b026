/* The summary drawer (seed §8.3, issue 17): a native modal <dialog> inside #summary-drawer
 * (modal.js), filled by [查看摘要]'s GET (summary_drawer.html) or by the socket's
 * compaction_preview (preview_drawer.html). It opens as it arrives; closing it (Esc, its
 * close button, the backdrop) leaves an empty, hidden #summary-drawer for the next one.
 *
 * Preview (issue 17 item 6): "/compact --preview [focus]" and the status line's Preview
 * button send {"type": "compact", "sessionId", "preview": true, "instructions"?}. The
 * drawer's Accept and Discard submit the hidden #preview-accept-form {"type":
 * "preview_accept", "sessionId", "previewId", "summary"} and #preview-discard-form {"type":
 * "preview_discard", "sessionId", "previewId"} (the drawer is outside the socket's element).
 * Once either is sent the drawer closes; an accept's bubble then arrives in #messages. A
 * compaction applied meanwhile closes it too: the preview no longer stands for the history. */
import { byId } from "../dom.js";
import { closeModal, openModal } from "../modal.js";

let opener = null; // the [查看摘要] link that asked for the drawer: focus goes back to it

function drawer() {
  const root = byId("summary-drawer");
  const dialog = root ? root.querySelector("dialog") : null;
  return { root, dialog };
}

// Emptied in place, not replaced: the browser fires "close" a moment after the dialog closed,
// and a [查看摘要] pressed in between has already made #summary-drawer its request's target.
function emptied(dialog) {
  const { root } = drawer();
  if (!root || !root.contains(dialog)) return; // already replaced by a newer drawer
  root.getAttributeNames().forEach((name) => {
    if (name !== "id") root.removeAttribute(name);
  });
  root.className = "drawer-root";
  root.hidden = true;
  root.replaceChildren();
  opener = null;
}

const shown = new WeakSet(); // a drawer opens once: closed, it only waits to be emptied

/** After a swap (htmx:afterSettle, htmx:wsAfterMessage): a drawer that arrived opens. */
export function show() {
  const { dialog } = drawer();
  if (!dialog || shown.has(dialog)) return;
  shown.add(dialog);
  dialog.addEventListener("close", () => emptied(dialog), { once: true });
  const from = opener && opener.isConnected ? opener : document.activeElement;
  openModal(dialog, from);
}

/** htmx:beforeRequest */
export function beforeRequest(elt) {
  if (elt && elt.hasAttribute && elt.hasAttribute("data-open-summary")) opener = elt;
}

function openPreview() {
  const { root, dialog } = drawer();
  return dialog && dialog.open && root.hasAttribute("data-preview-id") ? dialog : null;
}

function closePreview() {
  const dialog = openPreview();
  if (!dialog) return;
  closeModal(dialog);
  const input = byId("chat-input");
  if (input && !input.disabled) input.focus();
}

/** htmx:wsAfterSend: Accept or Discard has gone. */
export function afterSend(form) {
  if (form && (form.id === "preview-accept-form" || form.id === "preview-discard-form")) {
    closePreview();
  }
}

/** htmx:wsAfterMessage: a compaction applied closes a preview; a preview that came opens. */
export function afterMessage(event) {
  const message = String((event.detail && event.detail.message) || "");
  if (message.indexOf('data-event="compaction_done"') >= 0) closePreview();
  show();
}
