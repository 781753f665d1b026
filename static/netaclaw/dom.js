/* NetaClaw: the DOM helpers every script shares, written once (ES module, no build step). */

/** The element with this id, or null. */
export function byId(id) {
  return document.getElementById(id);
}

/** Every element matching a selector, as an array. */
export function all(selector, root = document) {
  return Array.from(root.querySelectorAll(selector));
}

/** The element an event happened on, or null (a text node, the window, the document). */
export function targetOf(event) {
  return event.target instanceof Element ? event.target : null;
}

/** Run once the document is parsed: at once from a module (modules run after parsing). */
export function onReady(run) {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
  else run();
}

/** Submit a form by id as a user would (its submit event runs: htmx's ws-send hears it). */
export function submitForm(id) {
  const form = byId(id);
  if (form && form.requestSubmit) form.requestSubmit();
}

/** Whether a scrolling element shows its end (give or take a few lines). */
export function nearBottom(el) {
  return el.scrollHeight - el.scrollTop - el.clientHeight < 80;
}

/** A panel toggled by buttons that name it in aria-controls: class and aria-expanded agree. */
export function setPanelOpen(panel, open) {
  panel.classList.toggle("is-open", open);
  all('[aria-controls="' + panel.id + '"]').forEach((button) => {
    button.setAttribute("aria-expanded", open ? "true" : "false");
  });
}

/** Whether a modal <dialog> is open: Esc is then the dialog's own (the browser closes it). */
export function modalOpen() {
  return document.querySelector("dialog:modal") !== null;
}
