/* The chat this page shows, and the user's chat list (issue 16). A new chat is not stored
 * until its first message: its page has no session id, and its chat form sends
 * {"type": "chat", "agent": <id>, "content"}. The server stores the chat with the message and
 * answers with a session_created signal (#session-signal): the page then takes the chat's id
 * (every form's sessionId, the address bar, the socket's reconnects). The same signal tells
 * of a chat renamed (every title shown follows) or deleted. */
import { all, byId } from "../dom.js";

export function currentSessionId() {
  const chat = byId("chat");
  return chat ? chat.getAttribute("data-session-id") || "" : "";
}

function setDisabled(ids, disabled) {
  ids.forEach((id) => {
    const el = byId(id);
    if (el) el.disabled = disabled;
  });
}

function adopt(sid, url, title) {
  const chat = byId("chat");
  if (!chat || chat.getAttribute("data-session-id")) return;
  chat.setAttribute("data-session-id", sid);
  all("[data-session-field]").forEach((input) => {
    input.value = sid;
  });
  const agentField = document.querySelector("#chat-form [data-agent-field]");
  if (agentField) {
    const input = document.createElement("input");
    input.type = "hidden";
    input.name = "sessionId";
    input.value = sid;
    input.setAttribute("data-session-field", "");
    agentField.replaceWith(input);
  }
  setDisabled(["compact-button", "compact-preview-button"], false);
  const heading = document.querySelector("#chat-title .chat-title-text");
  if (heading) heading.setAttribute("data-session-title", sid);
  all('input[name="next"]').forEach((next) => {
    next.value = url;
  });
  if (window.history && history.replaceState) history.replaceState(null, "", url);
  retitle(sid, title);
}

function retitle(sid, title) {
  all(`[data-session-title="${sid}"]`).forEach((el) => {
    el.textContent = title;
  });
  all(`[data-session-title-attr="${sid}"]`).forEach((el) => {
    el.setAttribute("data-title", title);
  });
  if (sid === currentSessionId()) document.title = title + " · NetaClaw";
}

function forget(sid) {
  all(`[data-session-item="${sid}"]`).forEach((el) => el.remove());
  if (sid !== currentSessionId()) return;
  const chat = byId("chat");
  const notices = byId("notices");
  if (notices && chat) {
    const notice = document.createElement("div");
    notice.className = "notice";
    notice.setAttribute("role", "alert");
    notice.setAttribute("data-reason", "session_deleted");
    notice.textContent = chat.getAttribute("data-label-deleted");
    notices.appendChild(notice);
  }
  setDisabled(["chat-input", "send-button", "compact-button", "compact-preview-button"], true);
}

/** htmx:oobBeforeSwap into #session-signal: a chat created here, renamed or deleted. */
export function signal(target, fragment) {
  if (!target || target.id !== "session-signal" || !fragment) return;
  const el = fragment.id === "session-signal" ? fragment : fragment.querySelector("#session-signal");
  if (!el) return;
  const kind = el.getAttribute("data-kind");
  const sid = el.getAttribute("data-session-id");
  if (kind === "created") adopt(sid, el.getAttribute("data-url"), el.getAttribute("data-title"));
  else if (kind === "updated") retitle(sid, el.getAttribute("data-title"));
  else if (kind === "deleted") forget(sid);
}
