/* The sidebar's chat search: results as the user types (the server renders them, escaped,
 * with the words marked), in place of the chat list while there is a query; Esc or an empty
 * box brings the list back. Without script the form opens the search page. */
import { byId } from "./dom.js";

const DELAY_MS = 200;
let timer = null;
let asked = 0; // a slow answer to an older query never replaces a newer one

function showList(shown) {
  const results = byId("chat-search-results");
  const nav = document.querySelector("[data-session-nav]");
  if (results) results.hidden = shown;
  if (nav) nav.hidden = !shown;
}

async function search(form, query) {
  const mine = ++asked;
  const url = `${form.getAttribute("action")}?q=${encodeURIComponent(query)}`;
  const response = await fetch(url, { headers: { "X-Fragment": "search" }, credentials: "same-origin" });
  if (mine !== asked || !response.ok) return;
  const html = await response.text();
  if (mine !== asked) return;
  byId("chat-search-results").innerHTML = html;
  showList(false);
}

document.addEventListener("input", (event) => {
  const input = event.target.closest && event.target.closest("[data-chat-search-input]");
  if (!input) return;
  clearTimeout(timer);
  const query = input.value.trim();
  if (!query) {
    asked++;
    showList(true);
    return;
  }
  timer = setTimeout(() => search(input.form, query), DELAY_MS);
});

document.addEventListener("submit", (event) => {
  const form = event.target.closest("[data-chat-search]");
  if (!form) return;
  event.preventDefault();
  const query = form.querySelector("[data-chat-search-input]").value.trim();
  if (query) search(form, query);
  else showList(true);
});

document.addEventListener("keydown", (event) => {
  const input = event.target.closest && event.target.closest("[data-chat-search-input]");
  if (!input || event.key !== "Escape" || !input.value) return;
  input.value = "";
  asked++;
  showList(true);
  event.stopPropagation();
});
