/* Files for the next message (issue 26 item 4): the paperclip, a drop on the chat and a
 * paste into the message box upload them at once to POST /api/sessions/<id>/attachments/
 * (the chat's workspace, its quota); they wait as chips above the box, and the next chat
 * frame names them: {"type": "chat", …, "attachments": ["attachments/a.pdf", …]}. A chat
 * not stored yet takes files once its first message has stored it. */
import { byId } from "../dom.js";
import { currentSessionId } from "./session.js";

let pending = [];
let uploading = 0;

function hint(text) {
  const el = byId("slash-hint");
  if (!el) return;
  el.textContent = text;
  el.hidden = !text;
}

function csrfToken() {
  try {
    return JSON.parse(document.body.getAttribute("hx-headers") || "{}")["X-CSRFToken"] || "";
  } catch {
    return "";
  }
}

function render() {
  const list = byId("attachments-pending");
  if (!list) return;
  list.replaceChildren(
    ...pending.map((file, index) => {
      const chip = document.createElement("li");
      chip.className = "attachment-chip";
      chip.dataset.pendingAttachment = file.path;
      const name = document.createElement("span");
      name.className = "attachment-name";
      name.textContent = file.name;
      const drop = document.createElement("button");
      drop.type = "button";
      drop.className = "attachment-remove";
      drop.dataset.removeAttachment = String(index);
      drop.setAttribute("aria-label", list.dataset.labelRemove.replace("__NAME__", file.name));
      drop.textContent = "×";
      chip.append(name, drop);
      return chip;
    })
  );
  list.hidden = pending.length === 0 && uploading === 0;
  list.setAttribute("aria-busy", uploading > 0 ? "true" : "false");
}

/** Upload ``files`` (a FileList or array) for the next message. */
export async function upload(files) {
  const list = byId("attachments-pending");
  const sid = currentSessionId();
  if (!list || !files || files.length === 0) return;
  if (!sid) {
    hint(list.dataset.labelUnsaved);
    return;
  }
  const body = new FormData();
  Array.from(files).forEach((file) => body.append("file", file, file.name));
  uploading += 1;
  render();
  try {
    const response = await fetch(`/api/sessions/${sid}/attachments/`, {
      method: "POST",
      body,
      headers: { "X-CSRFToken": csrfToken() },
      credentials: "same-origin",
    });
    const answer = await response.json().catch(() => ({}));
    if (!response.ok) {
      hint(answer.error || list.dataset.labelFailed);
    } else {
      pending = pending.concat(answer.attachments || []);
      hint("");
    }
  } catch {
    hint(list.dataset.labelFailed);
  } finally {
    uploading -= 1;
    render();
  }
}

/** The chat frame about to go: it names the files waiting, which then leave the box. */
export function takeForMessage(parameters) {
  if (pending.length === 0) return;
  parameters.attachments = pending.map((file) => file.path);
  pending = [];
  render();
}

export function busy() {
  return uploading > 0;
}

/** change: the paperclip's file input. */
export function changed(event) {
  const input = event.target;
  if (!(input instanceof HTMLInputElement) || input.id !== "attach-input") return;
  upload(input.files).finally(() => {
    input.value = "";
  });
}

/** click: a chip's × drops it from the next message. */
export function click(target) {
  const remove = target.closest("[data-remove-attachment]");
  if (!remove) return false;
  pending.splice(Number(remove.dataset.removeAttachment), 1);
  render();
  return true;
}

/** paste into the message box: files pasted (a screenshot) are uploaded. */
export function pasted(event) {
  const files = event.clipboardData && event.clipboardData.files;
  if (!files || files.length === 0 || !event.target.closest || !event.target.closest("#chat-form")) return;
  event.preventDefault();
  upload(files);
}

function carriesFiles(event) {
  return event.dataTransfer && Array.from(event.dataTransfer.types || []).includes("Files");
}

/** dragover / dragleave / drop on the chat: files dropped are uploaded. */
export function dragged(event) {
  const chat = byId("chat");
  if (!chat || !carriesFiles(event) || !chat.contains(event.target)) return;
  event.preventDefault();
  chat.classList.toggle("is-dropping", event.type === "dragover");
  if (event.type === "drop") upload(event.dataTransfer.files);
}
