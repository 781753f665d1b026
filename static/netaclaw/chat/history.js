/* The message list as a whole (issue 17 item 1). Every compaction bubble still in effect
 * carries a hidden ws-send form {"type": "undo", "sessionId", "compactionId"}; only the
 * newest one is shown (the server refuses an older one: not_latest). compaction_undone
 * brings a [data-history-refresh] signal into #notices, and a pin from the drawer answers
 * with the netaclaw:history-changed event: the page then reloads #messages from its own
 * address (its view), so the restored originals show in their places and the summary
 * leaves the compacted view. */
import { all, byId, nearBottom } from "../dom.js";

export function showLatestUndo() {
  const forms = all("#messages [data-undo-form]");
  forms.forEach((form, i) => {
    form.hidden = i !== forms.length - 1;
  });
}

/** htmx:wsConfigSend of an undo form: its button works once; a refusal's notice says why. */
export function undoSent(form) {
  const button = form.querySelector("[data-undo]");
  if (button) button.disabled = true;
  setTimeout(() => {
    if (document.body.contains(button)) button.disabled = false;
  }, 5000);
}

let reloading = false;

/** The message list again, from the page's own address. */
export function reload() {
  const messages = byId("messages");
  if (!messages || !window.htmx || reloading) return;
  const scroller = byId("scroller");
  const atBottom = scroller ? nearBottom(scroller) : true;
  reloading = true;
  window.htmx
    .ajax("GET", window.location.pathname + window.location.search, {
      target: "#messages",
      select: "#messages",
      swap: "outerHTML",
    })
    .then(
      () => {
        reloading = false;
        showLatestUndo();
        if (atBottom && scroller) scroller.scrollTop = scroller.scrollHeight;
      },
      () => {
        reloading = false;
      }
    );
}

/** htmx:wsAfterMessage: a refresh signal is taken (and dropped); Undo stays on the newest. */
export function afterMessage() {
  const signals = all("#notices [data-history-refresh]");
  if (signals.length) {
    signals.forEach((signal) => signal.remove());
    reload();
  }
  showLatestUndo();
}
