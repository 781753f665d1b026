/* Copy buttons: a code block's (web/code_blocks.py) and an answer's Markdown. The labels
 * come from <body data-label-copied / data-label-copy-failed>. */
import { targetOf } from "./dom.js";

function flash(button, label) {
  if (!button.dataset.label) button.dataset.label = button.textContent;
  button.textContent = label;
  clearTimeout(button._netaclawTimer);
  button._netaclawTimer = setTimeout(() => {
    button.textContent = button.dataset.label;
  }, 1500);
}

// without the Clipboard API (plain HTTP on another host): a selection and execCommand
function copyWithSelection(text) {
  const area = document.createElement("textarea");
  area.value = text;
  area.setAttribute("readonly", "");
  area.className = "sr-only";
  document.body.appendChild(area);
  area.select();
  let done = false;
  try {
    done = document.execCommand("copy");
  } catch (e) {
    done = false;
  }
  area.remove();
  return done;
}

function copy(text, button) {
  const labels = document.body.dataset;
  const ok = () => flash(button, labels.labelCopied || "Copied");
  const failed = () => {
    if (copyWithSelection(text)) ok();
    else flash(button, labels.labelCopyFailed || "Could not copy");
  };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(ok, failed);
  } else {
    failed();
  }
}

document.addEventListener("click", (event) => {
  const target = targetOf(event);
  if (!target) return;
  const code = target.closest(".codeblock-copy");
  if (code) {
    const block = code.closest(".codeblock").querySelector("pre code");
    copy(block ? block.textContent : "", code);
    return;
  }
  const message = target.closest("[data-copy-message]");
  if (message) {
    const source = message.parentNode.querySelector("template.msg-source");
    copy(source ? source.content.textContent : "", message);
  }
});
