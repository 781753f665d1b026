/* NetaClaw chat page: the entry module (ES modules, no build step). The htmx WebSocket
 * extension does the socket and the out-of-band swaps; the modules in chat/ do one concern
 * each. Every htmx event the page reacts to, and every click, key and input of the chat's
 * own controls, is heard here, once, and handed to the concerns in order.
 *
 * Frames the page sends besides the message box's (chat/composer.js): the Stop button (and
 * Esc) sends #stop-form, {"type": "stop", "sessionId"}; a failed or stopped turn's Retry
 * sends #retry-form, {"type": "retry", "sessionId"}; a message's Regenerate and Edit, and
 * a fork's version switch, send theirs (chat/partials/message_actions.html,
 * branch_switch.html; issue 26 item 1); Undo, "Compact up to here", the
 * ask-mode callout and the preview drawer send theirs (chat/history.js, menu.js,
 * suggestion.js, drawer.js). The page also loads chat-list.js (the chat list and its rename
 * and delete dialogs) and copy.js (copy buttons), which other pages share. */
import * as attachments from "./chat/attachments.js";
import * as composer from "./chat/composer.js";
import * as context from "./chat/context.js";
import * as drawer from "./chat/drawer.js";
import * as frames from "./chat/frames.js";
import * as headerMenu from "./chat/header_menu.js";
import * as history from "./chat/history.js";
import * as menu from "./chat/menu.js";
import * as scroll from "./chat/scroll.js";
import * as session from "./chat/session.js";
import { SLASH_COMMANDS, parseSlashCommand } from "./chat/slash.js";
import * as socket from "./chat/socket.js";
import * as suggestion from "./chat/suggestion.js";
import * as turn from "./chat/turn.js";
import { modalOpen, onReady, submitForm, targetOf } from "./dom.js";

window.NetaClaw = Object.assign(window.NetaClaw || {}, { parseSlashCommand, SLASH_COMMANDS });

// before htmx processes the page (it does on DOMContentLoaded; modules run before that)
socket.install();
frames.install();

function on(name, handler, capture = false) {
  document.addEventListener(name, handler, capture);
}

// --- sending -------------------------------------------------------------------------

on("htmx:wsConfigSend", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement)) return;
  const invalid = event.detail.errors && event.detail.errors.length > 0;
  if (form.id === "chat-form") composer.send(event, form);
  else if (form.id === "retry-form") turn.setBusy(true);
  else if (form.hasAttribute("data-edit-form") || form.hasAttribute("data-regenerate-form")) {
    if (invalid) return;
    history.branchSent(form);
  }
  else if (form.hasAttribute("data-undo-form")) history.undoSent(form);
  else if (invalid) return; // htmx found the form invalid: nothing goes
  else if (form.hasAttribute("data-compact-up-to")) menu.confirmUpTo(event, form);
  else if (form.hasAttribute("data-suggest-form")) suggestion.sent();
});

on("htmx:wsAfterSend", (event) => drawer.afterSend(event.target));

// --- the socket ----------------------------------------------------------------------

on("htmx:wsConnecting", () => socket.setConnection("connecting"));
on("htmx:wsOpen", () => socket.setConnection("open"));
on("htmx:wsClose", () => socket.setConnection("closed"));

on("htmx:wsBeforeMessage", () => scroll.beforeMessage());

on("htmx:wsAfterMessage", (event) => {
  scroll.afterMessage();
  turn.updateWaits();
  history.afterMessage();
  frames.followProgress();
  drawer.afterMessage(event);
});

on("htmx:oobBeforeSwap", (event) => {
  const { target, fragment } = event.detail;
  if (menu.holds(target)) {
    event.preventDefault();
    return;
  }
  session.signal(target, fragment);
  frames.beforeSwap(target, fragment);
});

// --- page requests (load earlier, pin, the summary drawer) ----------------------------

on("htmx:beforeRequest", (event) => {
  menu.beforeRequest(event.detail.elt);
  drawer.beforeRequest(event.detail.elt);
});

on("htmx:afterRequest", (event) => menu.afterRequest(event.detail.elt));

on("htmx:beforeSwap", (event) => scroll.beforeSwap(event.detail.target));

on("htmx:afterSettle", (event) => {
  scroll.afterSettle();
  drawer.show();
  menu.afterSettle(event.target);
  history.showLatestUndo();
});

on("netaclaw:history-changed", () => history.reload());

// --- clicks, keys, typing --------------------------------------------------------------

on("click", (event) => {
  const target = targetOf(event);
  if (!target) return;
  const dismiss = target.closest("[data-dismiss]");
  if (dismiss && dismiss.closest(".notice")) dismiss.closest(".notice").remove();
  if (!target.closest("details[data-msg-menu]")) menu.closeAll(null);
  if (headerMenu.click(target) || context.click(target) || attachments.click(target)) return;
  suggestion.click(target);
});

// Esc closes an open menu or the Context panel first, then stops the agent (like Stop); in
// an open dialog it is the dialog's (the browser closes it), and an open chat list on a
// phone takes it before this (chat-list.js).
function escape(event) {
  if (modalOpen()) return;
  if (menu.closeOpen() || context.closeOpen() || headerMenu.closeOpen()) {
    event.preventDefault();
  } else if (turn.isWorking()) {
    event.preventDefault();
    submitForm("stop-form");
  }
}

on("keydown", (event) => {
  if (event.key === "Escape") escape(event);
  else composer.keydown(event);
});

on("input", (event) => composer.input(event));
on("change", (event) => attachments.changed(event));
on("paste", (event) => attachments.pasted(event));
["dragover", "dragleave", "drop"].forEach((name) => on(name, (event) => attachments.dragged(event)));
on("toggle", (event) => menu.toggled(event), true);

onReady(() => {
  if (!scroll.toFound()) scroll.toBottom();
  turn.updateWaits();
  history.showLatestUndo();
});
setInterval(turn.updateWaits, 1000);
