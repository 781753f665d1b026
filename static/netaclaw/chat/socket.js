/* The socket (the htmx ws extension does the socket and the out-of-band swaps): a chat
 * started on this page reconnects to its own session's events, and the header says whether
 * the page is connected. */
import { byId } from "../dom.js";
import { currentSessionId } from "./session.js";

/** Before htmx connects: the socket's address names the chat once it has one. */
export function install() {
  const htmx = window.htmx;
  if (!htmx || typeof htmx.createWebSocket !== "function") return;
  const createWebSocket = htmx.createWebSocket;
  htmx.createWebSocket = function (url) {
    const sid = currentSessionId();
    if (sid && url.indexOf("session=") < 0) {
      url += (url.indexOf("?") < 0 ? "?" : "&") + "session=" + encodeURIComponent(sid);
    }
    return createWebSocket(url);
  };
}

/** htmx:wsConnecting / wsOpen / wsClose */
export function setConnection(state) {
  const chat = byId("chat");
  if (chat) chat.setAttribute("data-ws", state);
  const label = byId("ws-status");
  if (label) {
    label.setAttribute("data-state", state);
    label.textContent = label.getAttribute("data-label-" + state) || state;
  }
}
