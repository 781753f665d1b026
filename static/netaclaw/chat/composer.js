/* The message box. Its form's values go to the socket as JSON (htmx ws-send):
 *   {"type": "chat", "sessionId": "<uuid>", "content": "<text>", "HEADERS": {...}}
 * and a slash command such as "/compact [focus]" becomes its own frame,
 *   {"type": "compact", "sessionId": "<uuid>", "instructions": "<focus>"}.
 * Enter sends, Shift+Enter is a new line, and the box grows with its text. The box stays
 * usable while the agent works: a message sent then waits as a chip under the running turn. */
import { byId } from "../dom.js";
import { busy as attachmentsBusy, takeForMessage } from "./attachments.js";
import { follow } from "./scroll.js";
import { currentSessionId } from "./session.js";
import { parseSlashCommand } from "./slash.js";
import { setBusy } from "./turn.js";

function showHint(text) {
  const hint = byId("slash-hint");
  if (!hint) return;
  hint.textContent = text;
  hint.hidden = !text;
}

function refuse(event, text) {
  event.preventDefault();
  showHint(text);
}

/** htmx:wsConfigSend of #chat-form: refuse, rewrite into a command's frame, or send. */
export function send(event, form) {
  const params = event.detail.parameters;
  const parsed = parseSlashCommand(params.content);
  if (parsed.kind === "unknown") {
    refuse(event, form.getAttribute("data-unknown-command").replace("__NAME__", parsed.name));
    return;
  }
  if (parsed.kind === "text" && !String(params.content || "").trim()) {
    refuse(event, form.getAttribute("data-empty-message"));
    return;
  }
  if (parsed.kind === "command" && !currentSessionId()) {
    refuse(event, form.getAttribute("data-compact-unsaved"));
    return;
  }
  if (parsed.kind === "text" && attachmentsBusy()) {
    refuse(event, form.getAttribute("data-uploading"));
    return;
  }
  if (parsed.kind === "command") {
    event.detail.parameters = Object.assign({}, parsed.frame, { sessionId: params.sessionId });
  } else {
    takeForMessage(params);
    setBusy(true);
  }
  showHint("");
  const input = byId("chat-input");
  if (input) {
    input.value = "";
    input.style.height = "";
  }
  follow();
}

function isBox(el) {
  return el instanceof HTMLTextAreaElement && el.id === "chat-input";
}

/** keydown: Enter sends (not while an input method composes), Shift+Enter breaks the line. */
export function keydown(event) {
  const input = event.target;
  if (!isBox(input)) return;
  if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) {
    return;
  }
  event.preventDefault();
  if (input.form) input.form.requestSubmit();
}

/** input: the hint goes, and the box grows with its text (up to 240 px). */
export function input(event) {
  const box = event.target;
  if (!isBox(box)) return;
  showHint("");
  box.style.height = "";
  box.style.height = Math.min(box.scrollHeight, 240) + "px";
}
