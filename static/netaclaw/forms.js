/* The agent and channel forms: a range input shows its value beside it
 * (<output data-range-output="input-id" data-suffix="%">), and a channel's base URL is
 * required for an OpenAI-compatible server. */
import { all, onReady } from "./dom.js";

function syncRange(input) {
  all(`[data-range-output="${input.id}"]`).forEach((out) => {
    out.textContent = input.value + (out.getAttribute("data-suffix") || "");
  });
}

function syncProvider(form) {
  const provider = form.querySelector('[name="provider"]');
  const baseUrl = form.querySelector('[name="base_url"]');
  if (!provider || !baseUrl) return;
  const required = provider.value === "openai_compatible";
  baseUrl.required = required;
  const field = baseUrl.closest(".field");
  if (field) field.classList.toggle("is-required", required);
}

document.addEventListener("input", (event) => {
  if (event.target instanceof HTMLInputElement && event.target.type === "range") {
    syncRange(event.target);
  }
});

document.addEventListener("change", (event) => {
  const form = event.target instanceof Element && event.target.closest("[data-channel-form]");
  if (form) syncProvider(form);
});

onReady(() => {
  all('input[type="range"]').forEach(syncRange);
  all("[data-channel-form]").forEach(syncProvider);
});
