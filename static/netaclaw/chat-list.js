/* The chat list (chat pages): a drawer on phones that the chat header's "Chats" button
 * opens, and the rename and delete dialogs of its chats and of the chat header (modal.js);
 * without script their links open the same forms as pages. */
import { byId, modalOpen, setPanelOpen, targetOf } from "./dom.js";
import { openModal } from "./modal.js";
import "./chat-search.js"; // the sidebar's search box

let sidebarOpener = null;

function setSidebar(open, focusBack) {
  const sidebar = byId("sidebar");
  if (!sidebar) return;
  setPanelOpen(sidebar, open);
  document.body.classList.toggle("sidebar-open", open);
  if (open) {
    const first = sidebar.querySelector("select, button, a[href]");
    if (first) first.focus();
  } else if (focusBack) {
    focusBack.focus();
  }
}

function sidebarOpen() {
  const sidebar = byId("sidebar");
  return Boolean(sidebar && sidebar.classList.contains("is-open"));
}

// one dialog each for rename and delete, pointed at the chat that was clicked
function openDialog(id, trigger, url) {
  const dialog = byId(id);
  if (!dialog || typeof dialog.showModal !== "function") return false; // the link's page
  dialog.querySelector("form").setAttribute("action", url);
  const title = trigger.getAttribute("data-title") || "";
  const input = dialog.querySelector('input[name="title"]');
  if (input) input.value = title;
  const shown = dialog.querySelector("[data-delete-title]");
  if (shown) shown.textContent = title;
  openModal(dialog, trigger);
  if (input) input.select();
  return true;
}

document.addEventListener("click", (event) => {
  const target = targetOf(event);
  if (!target) return;
  const toggle = target.closest("[data-sidebar-toggle]");
  if (toggle) {
    const open = !sidebarOpen();
    sidebarOpener = open ? toggle : null;
    setSidebar(open, null);
    return;
  }
  if (target.closest("[data-sidebar-close]")) {
    setSidebar(false, sidebarOpener);
    sidebarOpener = null;
    return;
  }
  const rename = target.closest("[data-rename-url]");
  if (rename && openDialog("rename-dialog", rename, rename.getAttribute("data-rename-url"))) {
    event.preventDefault();
    return;
  }
  const remove = target.closest("[data-delete-url]");
  if (remove && openDialog("delete-dialog", remove, remove.getAttribute("data-delete-url"))) {
    event.preventDefault();
  }
});

// Esc closes the open chat list before anything else of the page hears it (an open dialog
// is closed by the browser instead)
document.addEventListener(
  "keydown",
  (event) => {
    if (event.key !== "Escape" || modalOpen() || !sidebarOpen()) return;
    setSidebar(false, sidebarOpener);
    sidebarOpener = null;
    event.stopImmediatePropagation();
  },
  true
);
