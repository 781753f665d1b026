/* The colour theme (issue 26 item 6), a classic script in <head> so the page is painted in
 * it from the first frame: the system's (prefers-color-scheme) unless this browser chose
 * light or dark with the top bar's switch (kept in localStorage). app.css reads
 * <html data-theme> through color-scheme and light-dark(). */
(function () {
  var KEY = "netaclaw-theme";
  var root = document.documentElement;

  function apply(theme) {
    if (theme === "light" || theme === "dark") root.dataset.theme = theme;
    else delete root.dataset.theme;
  }

  function stored() {
    try {
      return localStorage.getItem(KEY) || "system";
    } catch (e) {
      return "system";
    }
  }

  apply(stored());

  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-theme-select]").forEach(function (select) {
      select.value = stored();
    });
  });

  document.addEventListener("change", function (event) {
    var select = event.target;
    if (!select.matches || !select.matches("[data-theme-select]")) return;
    try {
      if (select.value === "system") localStorage.removeItem(KEY);
      else localStorage.setItem(KEY, select.value);
    } catch (e) {
      /* private mode: the choice lasts for this page */
    }
    apply(select.value);
  });
})();
