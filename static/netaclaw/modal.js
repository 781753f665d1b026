/* NetaClaw: the one modal mechanism, native <dialog> shown with showModal().
 *
 * The browser makes the rest of the page inert, puts the dialog above everything, closes it
 * on Esc and gives the focus back to where it was. This module adds, for every modal dialog
 * alike, only what the browser leaves out:
 *   - a dialog with the autofocus attribute takes the focus itself (Chromium gives it to the
 *     first control; a control with autofocus inside the dialog is the browser's own);
 *   - [data-dialog-close] closes its dialog, and so does a click on the backdrop of a dialog
 *     marked data-backdrop-close (the summary drawer);
 *   - Tab and Shift+Tab wrap at the dialog's edges (Chromium lets them leave for its own UI);
 *   - focus goes back to the opener it was given when what had the focus is gone, e.g. when
 *     htmx swapped the dialog's content while it was open.
 */
import { all, targetOf } from "./dom.js";

const openers = new WeakMap();

/** Show a dialog as a modal; opener gets the focus back if it cannot come back by itself. */
export function openModal(dialog, opener) {
  if (!dialog || dialog.open || typeof dialog.showModal !== "function") return false;
  if (opener instanceof HTMLElement && opener !== document.body) openers.set(dialog, opener);
  dialog.showModal();
  if (dialog.hasAttribute("autofocus")) dialog.focus();
  return true;
}

export function closeModal(dialog) {
  if (dialog && dialog.open) dialog.close();
}

// the controls Tab can reach now: not disabled, not hidden, not inside a closed <details>
const TABBABLE = 'a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex="-1"])';

function tabbable(dialog) {
  return all(TABBABLE, dialog).filter((el) => {
    if (el.disabled) return false;
    return el.checkVisibility ? el.checkVisibility() : el.getClientRects().length > 0;
  });
}

function wrapTab(event) {
  const dialog = document.querySelector("dialog:modal");
  if (!dialog) return;
  const controls = tabbable(dialog);
  if (!controls.length) return;
  const first = controls[0];
  const last = controls[controls.length - 1];
  const active = document.activeElement;
  let next = null;
  if (!dialog.contains(active)) next = first;
  else if (event.shiftKey && (active === first || active === dialog)) next = last;
  else if (!event.shiftKey && active === last) next = first;
  if (next) {
    event.preventDefault();
    next.focus();
  }
}

function outside(dialog, event) {
  const box = dialog.getBoundingClientRect();
  const x = event.clientX;
  const y = event.clientY;
  return x < box.left || x > box.right || y < box.top || y > box.bottom;
}

document.addEventListener("keydown", (event) => {
  if (event.key === "Tab") wrapTab(event);
});

document.addEventListener("click", (event) => {
  const target = targetOf(event);
  if (!target) return;
  const closer = target.closest("[data-dialog-close]");
  if (closer) {
    closeModal(closer.closest("dialog"));
    return;
  }
  // a click on the backdrop is a click on the dialog element, outside its box
  if (target instanceof HTMLDialogElement && target.hasAttribute("data-backdrop-close")) {
    if (event.detail > 0 && outside(target, event)) closeModal(target);
  }
});

// "close" does not bubble: listen while it goes down
document.addEventListener(
  "close",
  (event) => {
    const dialog = event.target;
    const opener = openers.get(dialog);
    openers.delete(dialog);
    const lost = !document.activeElement || document.activeElement === document.body;
    if (opener && opener.isConnected && lost) opener.focus();
  },
  true
);
