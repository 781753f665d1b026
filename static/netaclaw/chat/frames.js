/* What the page filters out of the socket's frames before htmx swaps them in.
 *  - A message already on the page (rendered with it, or sent twice) is not added again; a
 *    queued message that arrives in the history leaves its chip.
 *  - The live summary (#compaction-progress) keeps its text when the socket re-renders the
 *    compaction status, and stays scrolled to its newest line.
 *  - A frame for something this page does not show (an in-place update of a message that is
 *    not on it, e.g. an original a pin brought back; a summary's progress when the page shows
 *    no running compaction) is dropped instead of making htmx log a missing target. */
import { all, byId } from "../dom.js";

function dropDuplicates(fragment) {
  Array.from(fragment.children).forEach((child) => {
    if (!child.id) return;
    if (byId(child.id)) {
      child.remove();
      return;
    }
    const queued = /^queued-(\d+)$/.exec(child.id);
    if (queued && byId("msg-" + queued[1])) {
      child.remove(); // already answered: no chip
      return;
    }
    const match = /^msg-(\d+)$/.exec(child.id);
    const chip = match && byId("queued-" + match[1]);
    if (chip) chip.remove();
  });
}

function keepLiveSummary(fragment) {
  if (!fragment.querySelector) return;
  const current = byId("compaction-progress");
  const incoming = fragment.querySelector("#compaction-progress");
  if (!current || current.hidden || !incoming || !incoming.hidden) return;
  if (!fragment.querySelector("#compaction-pending")) return; // the compaction has ended
  incoming.replaceWith(current.cloneNode(true));
}

/** htmx:oobBeforeSwap */
export function beforeSwap(target, fragment) {
  if (!target || !fragment) return;
  if ((target.id === "messages" || target.id === "queued") && fragment.children) {
    dropDuplicates(fragment);
  } else if (target.id === "compaction-status") {
    keepLiveSummary(fragment);
  }
}

/** htmx:wsAfterMessage: the live summary shows its newest line. */
export function followProgress() {
  all("[data-progress-text]").forEach((text) => {
    text.scrollTop = text.scrollHeight;
  });
}

const IN_PLACE = /^(msg-\d+|compaction-progress)$/;
const UPDATE = /<[a-z]+\b[^>]*\bid="(msg-\d+|compaction-progress)"[^>]*\bhx-swap-oob="true"/;

/** Before htmx processes the page: an extension drops such frames' orphan parts. */
export function install() {
  const htmx = window.htmx;
  if (!htmx || typeof htmx.defineExtension !== "function") return;
  htmx.defineExtension("netaclaw-missing-updates", {
    transformResponse(text, xhr) {
      if (xhr || !UPDATE.test(text)) return text; // socket frames only
      const template = document.createElement("template");
      template.innerHTML = text;
      let dropped = false;
      Array.from(template.content.children).forEach((child) => {
        const oob = child.getAttribute("hx-swap-oob");
        if (IN_PLACE.test(child.id) && oob === "true" && !byId(child.id)) {
          child.remove();
          dropped = true;
        }
      });
      return dropped ? template.innerHTML : text;
    },
  });
  const root = document.documentElement;
  const listed = root.getAttribute("hx-ext");
  if (!listed || listed.indexOf("netaclaw-missing-updates") < 0) {
    const names = listed ? listed + ", netaclaw-missing-updates" : "netaclaw-missing-updates";
    root.setAttribute("hx-ext", names);
  }
}
