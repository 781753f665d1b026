/* The chat header's ⋯ menu on a phone (issue 26 item 7): the header is one line, and its
 * tools (the model, the history view, rename, delete, export, the agent's settings) open
 * under it. A click outside or Esc closes it. */
function header() {
  return document.querySelector(".chat-header");
}

function setOpen(open) {
  const head = header();
  if (!head) return;
  head.toggleAttribute("data-menu-open", open);
  const toggle = head.querySelector("[data-chat-menu-toggle]");
  if (toggle) toggle.setAttribute("aria-expanded", open ? "true" : "false");
}

/** click: the ⋯ toggles the menu; a click elsewhere closes it. */
export function click(target) {
  const head = header();
  if (!head) return false;
  if (target.closest("[data-chat-menu-toggle]")) {
    setOpen(!head.hasAttribute("data-menu-open"));
    return true;
  }
  if (!target.closest("#chat-tools")) setOpen(false);
  return false;
}

/** Esc: true when it closed the menu. */
export function closeOpen() {
  const head = header();
  if (!head || !head.hasAttribute("data-menu-open")) return false;
  setOpen(false);
  return true;
}
