/* The message list as a whole (issue 17 item 1). Every compaction bubble still in effect
 * carries a hidden ws-send form {"type": "undo", "sessionId", "compactionId"}; only the
 * newest one is shown (the server refuses an older one: not_latest). compaction_undone
 * brings a [data-history-refresh] signal into #notices, and a pin from the drawer answers
 * with the netaclaw:history-changed event: the page then reloads #messages from its own
 * address (its view), so the restored originals show in their places and the summary
 * leaves the compacted view. A version switch (issue 26 item 1) reloads it the same way;
 * a regenerate or an edit drops what it set aside ([data-branch-cut]). */
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

/** A regenerate or an edit set messages aside (issue 26 item 1): their bubbles leave, from
 * the first one set aside on, up to the highest id set aside — a bubble of the new version
 * that arrived first stays. */
function cutBranch(signal) {
  const first = byId(`msg-${signal.dataset.branchCut}`);
  const through = Number(signal.dataset.branchCutThrough || 0);
  signal.remove();
  if (!first) return;
  let node = first;
  while (node) {
    const next = node.nextElementSibling;
    const id = Number((node.id || "").replace(/^msg-/, ""));
    if (node === first || (node.id.startsWith("msg-") && id <= through)) node.remove();
    node = next;
  }
}

/** htmx:wsAfterMessage: a refresh signal is taken (and dropped); Undo stays on the newest. */
export function afterMessage() {
  all("#notices [data-branch-cut]").forEach(cutBranch);
  const signals = all("#notices [data-history-refresh]");
  if (signals.length) {
    signals.forEach((signal) => signal.remove());
    reload();
  }
  showLatestUndo();
}

/** htmx:wsConfigSend of a Regenerate or an Edit: the turn starts (the server says so, or
 * refuses with a notice); an edit's box closes. */
export function branchSent(form) {
  const edit = form.closest("details[data-msg-edit]");
  if (edit) edit.open = false;
  const button = form.querySelector("button");
  if (button) button.disabled = true;
  setTimeout(() => {
    if (document.body.contains(button)) button.disabled = false;
  }, 5000);
}
