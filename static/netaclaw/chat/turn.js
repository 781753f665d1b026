/* The running turn and the running compaction: whether the agent works, and for how long
 * and for what the page waits (#turn-status, #compaction-pending; counted every second). */
import { all, byId } from "../dom.js";

export function setBusy(busy) {
  const status = byId("turn-status");
  if (status) status.setAttribute("data-busy", busy ? "true" : "false");
}

/** A turn or a compaction runs: Esc (like the Stop button) would stop it. */
export function isWorking() {
  const status = byId("turn-status");
  const flag = byId("compaction-flag");
  return (
    (status && status.getAttribute("data-busy") === "true") ||
    (flag && flag.getAttribute("data-compacting") === "true")
  );
}

const waitStarted = { turn: null, compaction: null };

function waiting(kind) {
  if (kind === "turn") {
    const status = byId("turn-status");
    return status && status.getAttribute("data-busy") === "true" ? status : null;
  }
  const flag = byId("compaction-flag");
  if (!flag || flag.getAttribute("data-compacting") !== "true") return null;
  return byId("compaction-pending") || flag;
}

function formatSeconds(seconds, template) {
  if (seconds < 60) return (template || "__N__ s").replace("__N__", String(seconds));
  const rest = seconds % 60;
  return Math.floor(seconds / 60) + ":" + (rest < 10 ? "0" : "") + rest;
}

function waitingOn(kind, chat) {
  if (kind === "turn") {
    const model = chat.getAttribute("data-waiting-model");
    return model ? chat.getAttribute("data-label-waiting-model").replace("__MODEL__", model) : "";
  }
  const auxiliary = chat.getAttribute("data-waiting-auxiliary");
  return auxiliary
    ? chat.getAttribute("data-label-waiting-auxiliary").replace("__MODEL__", auxiliary)
    : chat.getAttribute("data-label-waiting-no-auxiliary");
}

function setText(selector, text) {
  all(selector).forEach((span) => {
    if (span.textContent !== text) span.textContent = text;
  });
}

/** Fill in the seconds waited, what for, and (after a while) that the model may be slow. */
export function updateWaits() {
  const chat = byId("chat");
  if (!chat) return;
  const slow = parseInt(chat.getAttribute("data-slow-seconds") || "30", 10);
  ["turn", "compaction"].forEach((kind) => {
    const el = waiting(kind);
    if (!el) {
      waitStarted[kind] = null;
      return;
    }
    if (waitStarted[kind] === null) {
      const already = parseInt(el.getAttribute("data-elapsed") || "0", 10) || 0;
      waitStarted[kind] = Date.now() - already * 1000;
    }
    const seconds = Math.max(0, Math.floor((Date.now() - waitStarted[kind]) / 1000));
    setText(`[data-elapsed-for="${kind}"]`, formatSeconds(seconds, chat.getAttribute("data-label-seconds")));
    setText(`[data-wait-on="${kind}"]`, waitingOn(kind, chat));
    all(`[data-wait-slow="${kind}"]`).forEach((span) => {
      span.hidden = seconds < slow;
      if (!span.textContent) span.textContent = chat.getAttribute("data-label-slow");
    });
  });
}
