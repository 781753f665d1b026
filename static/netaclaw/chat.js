/* NetaClaw chat page: slash commands, sending, and the small behaviours around the
 * htmx WebSocket extension (which does the socket and the out-of-band swaps).
 *
 * Page -> server frames are the chat form's values as JSON (htmx ws-send):
 *   {"type": "chat", "sessionId": "<uuid>", "content": "<text>", "HEADERS": {...}}
 * and parseSlashCommand rewrites "/compact [focus]" into
 *   {"type": "compact", "sessionId": "<uuid>", "instructions": "<focus>"}.
 * The Stop button (and Esc) sends #stop-form, {"type": "stop", "sessionId"}; a failed or
 * stopped turn's Retry sends #retry-form, {"type": "retry", "sessionId"}. The composer stays
 * usable while the agent works: a message sent then waits as a chip under the running turn.
 *
 * A new chat is not stored until its first message: its page has no session id, and its
 * chat form sends {"type": "chat", "agent": <id>, "content"}. The server stores the chat with
 * the message and answers with a session_created signal (#session-signal): the page then
 * takes the chat's id (every form's sessionId, the address bar, the socket's reconnects).
 * The same signal tells of a chat renamed (every title shown follows) or deleted.
 *
 * While the agent thinks or a compaction runs, the page counts the seconds and says what it
 * waits for (#turn-status, #compaction-pending).
 */
(function () {
  "use strict";

  // The slash commands the input understands (seed §8.2). Add an entry to extend:
  // build(argument) returns the frame fields (sessionId is added by the caller).
  var SLASH_COMMANDS = {
    compact: {
      // "/compact --preview [focus]": the summary is shown before it applies (issue 17)
      build: function (argument) {
        var frame = { type: "compact" };
        var flag = /^--preview(?:\s+|$)/.exec(argument);
        if (flag) {
          frame.preview = true;
          argument = argument.slice(flag[0].length).trim();
        }
        if (argument) frame.instructions = argument;
        return frame;
      },
    },
  };

  var SLASH_PATTERN = /^\/([A-Za-z][\w-]*)(?:\s+([\s\S]*))?$/;

  /**
   * Classify what the user typed.
   *   {kind: "text", content}                   - an ordinary message
   *   {kind: "command", name, frame}            - a known slash command
   *   {kind: "unknown", name}                   - "/word" that is no command
   * Text that merely starts with a path ("/usr/bin/python fails") is ordinary text.
   */
  function parseSlashCommand(raw) {
    var text = (raw || "").trim();
    var match = SLASH_PATTERN.exec(text);
    if (!match) return { kind: "text", content: raw };
    var name = match[1].toLowerCase();
    var argument = (match[2] || "").trim();
    var command = Object.prototype.hasOwnProperty.call(SLASH_COMMANDS, name)
      ? SLASH_COMMANDS[name]
      : null;
    if (!command) return { kind: "unknown", name: "/" + match[1] };
    return { kind: "command", name: name, frame: command.build(argument) };
  }

  window.NetaClaw = window.NetaClaw || {};
  window.NetaClaw.parseSlashCommand = parseSlashCommand;
  window.NetaClaw.SLASH_COMMANDS = SLASH_COMMANDS;

  function byId(id) {
    return document.getElementById(id);
  }

  function showHint(text) {
    var hint = byId("slash-hint");
    if (!hint) return;
    hint.textContent = text;
    hint.hidden = !text;
  }

  function setBusy(busy) {
    var status = byId("turn-status");
    if (status) status.setAttribute("data-busy", busy ? "true" : "false");
  }

  function isWorking() {
    var status = byId("turn-status");
    var flag = byId("compaction-flag");
    return (
      (status && status.getAttribute("data-busy") === "true") ||
      (flag && flag.getAttribute("data-compacting") === "true")
    );
  }

  function submitForm(id) {
    var form = byId(id);
    if (form && form.requestSubmit) form.requestSubmit();
  }

  // --- scrolling -------------------------------------------------------------

  var stickToBottom = true;

  function scroller() {
    return byId("scroller");
  }

  function nearBottom(el) {
    return el.scrollHeight - el.scrollTop - el.clientHeight < 80;
  }

  function scrollToBottom() {
    var el = scroller();
    if (el) el.scrollTop = el.scrollHeight;
  }

  // --- sending ---------------------------------------------------------------

  document.addEventListener("htmx:wsConfigSend", function (event) {
    var form = event.target;
    if (form instanceof HTMLFormElement && form.id === "retry-form") {
      setBusy(true);
      return;
    }
    if (!(form instanceof HTMLFormElement) || form.id !== "chat-form") return;
    var params = event.detail.parameters;
    var parsed = parseSlashCommand(params.content);
    if (parsed.kind === "unknown") {
      event.preventDefault();
      showHint(form.getAttribute("data-unknown-command").replace("__NAME__", parsed.name));
      return;
    }
    if (parsed.kind === "text" && !String(params.content || "").trim()) {
      event.preventDefault();
      showHint(form.getAttribute("data-empty-message"));
      return;
    }
    if (parsed.kind === "command" && !currentSessionId()) {
      event.preventDefault();
      showHint(form.getAttribute("data-compact-unsaved"));
      return;
    }
    if (parsed.kind === "command") {
      var frame = Object.assign({}, parsed.frame, { sessionId: params.sessionId });
      event.detail.parameters = frame;
    } else {
      setBusy(true);
    }
    showHint("");
    var input = byId("chat-input");
    if (input) {
      input.value = "";
      input.style.height = "";
    }
    stickToBottom = true;
    scrollToBottom();
  });

  document.addEventListener("keydown", function (event) {
    var input = event.target;
    if (!(input instanceof HTMLTextAreaElement) || input.id !== "chat-input") return;
    if (event.key !== "Enter" || event.shiftKey || event.isComposing || event.keyCode === 229) {
      return;
    }
    event.preventDefault();
    if (input.form) input.form.requestSubmit();
  });

  document.addEventListener("input", function (event) {
    var input = event.target;
    if (!(input instanceof HTMLTextAreaElement) || input.id !== "chat-input") return;
    showHint("");
    input.style.height = "";
    input.style.height = Math.min(input.scrollHeight, 240) + "px";
  });

  // --- the socket ------------------------------------------------------------

  function currentSessionId() {
    var chat = byId("chat");
    return chat ? chat.getAttribute("data-session-id") || "" : "";
  }

  // A chat started on this page reconnects to its own session's events.
  if (window.htmx && typeof window.htmx.createWebSocket === "function") {
    var createWebSocket = window.htmx.createWebSocket;
    window.htmx.createWebSocket = function (url) {
      var sid = currentSessionId();
      if (sid && url.indexOf("session=") < 0) {
        url += (url.indexOf("?") < 0 ? "?" : "&") + "session=" + encodeURIComponent(sid);
      }
      return createWebSocket(url);
    };
  }

  function setConnection(state) {
    var chat = byId("chat");
    if (chat) chat.setAttribute("data-ws", state);
    var label = byId("ws-status");
    if (label) {
      label.setAttribute("data-state", state);
      label.textContent = label.getAttribute("data-label-" + state) || state;
    }
  }

  document.addEventListener("htmx:wsConnecting", function () {
    setConnection("connecting");
  });
  document.addEventListener("htmx:wsOpen", function () {
    setConnection("open");
  });
  document.addEventListener("htmx:wsClose", function () {
    setConnection("closed");
  });
  document.addEventListener("htmx:wsBeforeMessage", function () {
    var el = scroller();
    stickToBottom = el ? nearBottom(el) : true;
  });
  document.addEventListener("htmx:wsAfterMessage", function () {
    if (stickToBottom) scrollToBottom();
  });

  // --- the chat list: a chat started here, renamed, deleted --------------------

  function adopt(sid, url, title) {
    var chat = byId("chat");
    if (!chat || chat.getAttribute("data-session-id")) return;
    chat.setAttribute("data-session-id", sid);
    document.querySelectorAll("[data-session-field]").forEach(function (input) {
      input.value = sid;
    });
    var agentField = document.querySelector("#chat-form [data-agent-field]");
    if (agentField) {
      var input = document.createElement("input");
      input.type = "hidden";
      input.name = "sessionId";
      input.value = sid;
      input.setAttribute("data-session-field", "");
      agentField.replaceWith(input);
    }
    var compact = byId("compact-button");
    if (compact) compact.disabled = false;
    var heading = document.querySelector("#chat-title .chat-title-text");
    if (heading) heading.setAttribute("data-session-title", sid);
    document.querySelectorAll('input[name="next"]').forEach(function (next) {
      next.value = url;
    });
    if (window.history && history.replaceState) history.replaceState(null, "", url);
    retitle(sid, title);
  }

  function retitle(sid, title) {
    document.querySelectorAll('[data-session-title="' + sid + '"]').forEach(function (el) {
      el.textContent = title;
    });
    document.querySelectorAll('[data-session-title-attr="' + sid + '"]').forEach(function (el) {
      el.setAttribute("data-title", title);
    });
    if (sid === currentSessionId()) document.title = title + " · NetaClaw";
  }

  function forget(sid) {
    document.querySelectorAll('[data-session-item="' + sid + '"]').forEach(function (el) {
      el.remove();
    });
    if (sid !== currentSessionId()) return;
    var chat = byId("chat");
    var notices = byId("notices");
    if (notices && chat) {
      var notice = document.createElement("div");
      notice.className = "notice";
      notice.setAttribute("role", "alert");
      notice.setAttribute("data-reason", "session_deleted");
      notice.textContent = chat.getAttribute("data-label-deleted");
      notices.appendChild(notice);
    }
    ["chat-input", "send-button", "compact-button"].forEach(function (id) {
      var el = byId(id);
      if (el) el.disabled = true;
    });
  }

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var fragment = event.detail.fragment;
    if (!event.detail.target || event.detail.target.id !== "session-signal" || !fragment) return;
    var signal = fragment.id === "session-signal" ? fragment : fragment.querySelector("#session-signal");
    if (!signal) return;
    var kind = signal.getAttribute("data-kind");
    var sid = signal.getAttribute("data-session-id");
    if (kind === "created") adopt(sid, signal.getAttribute("data-url"), signal.getAttribute("data-title"));
    else if (kind === "updated") retitle(sid, signal.getAttribute("data-title"));
    else if (kind === "deleted") forget(sid);
  });

  // --- waiting: for how long, and for what ------------------------------------

  var waitStarted = { turn: null, compaction: null };

  function waiting(kind) {
    if (kind === "turn") {
      var status = byId("turn-status");
      return status && status.getAttribute("data-busy") === "true" ? status : null;
    }
    var flag = byId("compaction-flag");
    return flag && flag.getAttribute("data-compacting") === "true" ? byId("compaction-pending") || flag : null;
  }

  function formatSeconds(seconds, template) {
    if (seconds < 60) return (template || "__N__ s").replace("__N__", String(seconds));
    var rest = seconds % 60;
    return Math.floor(seconds / 60) + ":" + (rest < 10 ? "0" : "") + rest;
  }

  function waitingOn(kind, chat) {
    if (kind === "turn") {
      var model = chat.getAttribute("data-waiting-model");
      return model ? chat.getAttribute("data-label-waiting-model").replace("__MODEL__", model) : "";
    }
    var auxiliary = chat.getAttribute("data-waiting-auxiliary");
    return auxiliary
      ? chat.getAttribute("data-label-waiting-auxiliary").replace("__MODEL__", auxiliary)
      : chat.getAttribute("data-label-waiting-no-auxiliary");
  }

  function updateWaits() {
    var chat = byId("chat");
    if (!chat) return;
    var slow = parseInt(chat.getAttribute("data-slow-seconds") || "30", 10);
    ["turn", "compaction"].forEach(function (kind) {
      var el = waiting(kind);
      if (!el) {
        waitStarted[kind] = null;
        return;
      }
      if (waitStarted[kind] === null) {
        var already = parseInt(el.getAttribute("data-elapsed") || "0", 10) || 0;
        waitStarted[kind] = Date.now() - already * 1000;
      }
      var seconds = Math.max(0, Math.floor((Date.now() - waitStarted[kind]) / 1000));
      var elapsed = formatSeconds(seconds, chat.getAttribute("data-label-seconds"));
      var on = waitingOn(kind, chat);
      document.querySelectorAll('[data-elapsed-for="' + kind + '"]').forEach(function (span) {
        if (span.textContent !== elapsed) span.textContent = elapsed;
      });
      document.querySelectorAll('[data-wait-on="' + kind + '"]').forEach(function (span) {
        if (span.textContent !== on) span.textContent = on;
      });
      document.querySelectorAll('[data-wait-slow="' + kind + '"]').forEach(function (span) {
        span.hidden = seconds < slow;
        if (!span.textContent) span.textContent = chat.getAttribute("data-label-slow");
      });
    });
  }

  setInterval(updateWaits, 1000);
  document.addEventListener("htmx:wsAfterMessage", updateWaits);

  // A message already on the page (rendered with it, or sent twice) is not added again;
  // a queued message that arrives in the history leaves its chip.
  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail.target;
    var fragment = event.detail.fragment;
    if (!target || !fragment || !fragment.children) return;
    if (target.id !== "messages" && target.id !== "queued") return;
    Array.prototype.slice.call(fragment.children).forEach(function (child) {
      if (!child.id) return;
      if (document.getElementById(child.id)) {
        child.remove();
        return;
      }
      var queued = /^queued-(\d+)$/.exec(child.id);
      if (queued && document.getElementById("msg-" + queued[1])) {
        child.remove(); // already answered: no chip
        return;
      }
      var match = /^msg-(\d+)$/.exec(child.id);
      var chip = match && document.getElementById("queued-" + match[1]);
      if (chip) chip.remove();
    });
  });

  // --- "load earlier" keeps the reading position -----------------------------

  var heightBeforeLoad = null;
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (target && target.id === "load-earlier") {
      var el = scroller();
      heightBeforeLoad = el ? el.scrollHeight - el.scrollTop : null;
    }
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (heightBeforeLoad === null) return;
    var el = scroller();
    if (el) el.scrollTop = el.scrollHeight - heightBeforeLoad;
    heightBeforeLoad = null;
  });

  // --- summary drawer --------------------------------------------------------

  var drawerOpener = null;

  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    if (elt && elt.hasAttribute && elt.hasAttribute("data-open-summary")) drawerOpener = elt;
  });

  document.addEventListener("htmx:afterSettle", function () {
    var root = byId("summary-drawer");
    if (!root || root.getAttribute("data-open") !== "true" || root.dataset.focused) return;
    root.dataset.focused = "1";
    var dialog = root.querySelector('[role="dialog"]');
    if (dialog) dialog.focus();
  });

  function closeDrawer() {
    var root = byId("summary-drawer");
    if (!root || root.getAttribute("data-open") !== "true") return;
    var empty = document.createElement("div");
    empty.id = "summary-drawer";
    empty.className = "drawer-root";
    empty.hidden = true;
    root.replaceWith(empty);
    if (drawerOpener && document.body.contains(drawerOpener)) drawerOpener.focus();
    drawerOpener = null;
  }

  document.addEventListener("click", function (event) {
    var target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    if (target.closest("[data-close-drawer]")) {
      closeDrawer();
      return;
    }
    var dismiss = target.closest("[data-dismiss]");
    if (dismiss) {
      var notice = dismiss.closest(".notice");
      if (notice) notice.remove();
    }
  });

  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") {
      var root = byId("summary-drawer");
      if (root && root.getAttribute("data-open") === "true") {
        closeDrawer();
      } else if (isWorking()) {
        event.preventDefault();
        submitForm("stop-form"); // Esc stops the agent, like the Stop button
      }
      return;
    }
    // Keep Tab inside the open drawer (it is a modal dialog).
    var root = byId("summary-drawer");
    if (event.key !== "Tab" || !root || root.getAttribute("data-open") !== "true") return;
    var dialog = root.querySelector('[role="dialog"]');
    // the drawer's controls that can take focus now (not those inside a closed <details>)
    var focusable = Array.prototype.filter.call(
      dialog.querySelectorAll('a[href], button, summary, textarea, [tabindex]:not([tabindex="-1"])'),
      function (el) {
        if (el.disabled) return false;
        return el.checkVisibility ? el.checkVisibility() : el.getClientRects().length > 0;
      }
    );
    if (!focusable.length) return;
    var first = focusable[0];
    var last = focusable[focusable.length - 1];
    if (event.shiftKey && (document.activeElement === first || document.activeElement === dialog)) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    } else if (!dialog.contains(document.activeElement)) {
      event.preventDefault();
      first.focus();
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    scrollToBottom();
    updateWaits();
  });
})();

/* --- message menu, context panel and ask mode (issue 17 items 2, 4, 8, 11) ---
 * The "⋯" menu of a message is a <details>: one open at a time, Esc or a click elsewhere
 * closes it. Its Pin / Unpin is an htmx POST (the bubble comes back with its badge); its
 * "Compact up to here" is a ws-send form sending {"type": "compact", "sessionId", "upTo"},
 * after a confirmation. The "Context" button opens the breakdown panel (#context-panel; the
 * socket replaces only its figures, so it stays open). The ask-mode callout
 * (#compaction-suggestion) sends compact, reveals the instructions field, or goes away.
 */
(function () {
  "use strict";

  function byId(id) {
    return document.getElementById(id);
  }

  // -- the message menu --------------------------------------------------------

  function closeMenus(except) {
    document.querySelectorAll("details[data-msg-menu][open]").forEach(function (menu) {
      if (menu !== except) menu.open = false;
    });
  }

  document.addEventListener(
    "toggle",
    function (event) {
      var menu = event.target;
      if (menu instanceof HTMLDetailsElement && menu.hasAttribute("data-msg-menu") && menu.open) {
        closeMenus(menu);
      }
    },
    true
  );

  // While a Pin / Unpin request runs, the socket's message_updated for the same bubble is
  // not swapped in: it would detach the form whose answer is on its way (htmx then finds no
  // target for the answer's out-of-band meter). The answer carries the same bubble.
  var pinning = {}; // message element id -> the form whose request runs
  var pinnedFrom = null; // the message whose Pin / Unpin was pressed: its menu gets the focus back

  document.addEventListener("htmx:beforeRequest", function (event) {
    var elt = event.detail.elt;
    var menu = elt && elt.closest ? elt.closest("details[data-msg-menu]") : null;
    var message = menu ? menu.closest(".msg") : null;
    pinnedFrom = message && message.id ? message.id : null;
    if (pinnedFrom) pinning[pinnedFrom] = elt;
  });

  document.addEventListener("htmx:afterRequest", function (event) {
    Object.keys(pinning).forEach(function (id) {
      if (pinning[id] === event.detail.elt) delete pinning[id];
    });
  });

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail.target;
    if (target && target.id && pinning[target.id]) event.preventDefault();
  });

  document.addEventListener("htmx:afterSettle", function (event) {
    var settled = event.target;
    if (!pinnedFrom || !(settled instanceof Element) || settled.id !== pinnedFrom) return;
    var toggle = settled.querySelector(".msg-menu-toggle");
    pinnedFrom = null;
    if (toggle) toggle.focus();
  });

  // -- the context panel -------------------------------------------------------

  function contextToggle() {
    return byId("context-toggle");
  }

  function setContextPanel(open, focusBack) {
    var panel = byId("context-panel");
    var toggle = contextToggle();
    if (!panel || !toggle) return;
    panel.hidden = !open;
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    if (!open && focusBack) toggle.focus();
  }

  function contextPanelOpen() {
    var panel = byId("context-panel");
    return !!panel && !panel.hidden;
  }

  // -- the ask-mode callout ----------------------------------------------------

  function clearSuggestion() {
    var slot = byId("compaction-suggestion");
    if (slot) slot.replaceChildren();
  }

  function revealInstructions(button) {
    var form = byId(button.getAttribute("aria-controls"));
    if (!form) return;
    form.hidden = false;
    button.setAttribute("aria-expanded", "true");
    var field = form.querySelector("textarea");
    if (field) field.focus();
  }

  // -- sending: confirm "Compact up to here"; the callout goes once it has sent -------

  document.addEventListener("htmx:wsConfigSend", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    var errors = event.detail.errors;
    if (errors && errors.length) return;
    if (form.hasAttribute("data-compact-up-to")) {
      if (!window.confirm(form.getAttribute("data-confirm"))) {
        event.preventDefault();
        return;
      }
      closeMenus(null);
    } else if (form.hasAttribute("data-suggest-form")) {
      setTimeout(clearSuggestion, 0);
    }
  });

  // -- clicks and keys ---------------------------------------------------------

  document.addEventListener("click", function (event) {
    var target = event.target instanceof Element ? event.target : null;
    if (!target) return;
    if (!target.closest("details[data-msg-menu]")) closeMenus(null);
    if (target.closest("[data-context-toggle]")) {
      setContextPanel(!contextPanelOpen(), false);
      return;
    }
    if (target.closest("[data-context-close]")) {
      setContextPanel(false, true);
      return;
    }
    if (contextPanelOpen() && !target.closest("#context-panel")) setContextPanel(false, false);
    var reveal = target.closest("[data-suggest-instructions]");
    if (reveal) {
      revealInstructions(reveal);
      return;
    }
    if (target.closest("[data-suggest-dismiss]")) clearSuggestion();
  });

  // Esc closes an open menu or the panel first (before it would stop the agent).
  window.addEventListener(
    "keydown",
    function (event) {
      if (event.key !== "Escape") return;
      var menu = document.querySelector("details[data-msg-menu][open]");
      if (menu) {
        menu.open = false;
        var summary = menu.querySelector("summary");
        if (summary) summary.focus();
      } else if (contextPanelOpen()) {
        setContextPanel(false, true);
      } else {
        return;
      }
      event.preventDefault();
      event.stopImmediatePropagation();
    },
    true
  );
})();

/* --- compaction bubble and summary drawer (issue 17 items 1, 6, 7, 12) ---
 * Undo: every compaction bubble still in effect carries a hidden ws-send form
 * {"type": "undo", "sessionId", "compactionId"}; only the newest one is shown (the server
 * refuses an older one: not_latest). compaction_undone brings a [data-history-refresh]
 * signal into #notices, and a pin from the drawer answers with the netaclaw:history-changed
 * event: the page then reloads #messages from its own address (its view), so the restored
 * originals show in their places and the summary leaves the compacted view.
 * The live summary (#compaction-progress) keeps its text when the socket re-renders the
 * compaction status, and stays scrolled to its newest line.
 * A frame for something this page does not show (an in-place update of a message that is
 * not on it, e.g. an original a pin brought back; a summary's progress when the page shows
 * no running compaction) is dropped instead of making htmx log a missing target.
 */
(function () {
  "use strict";

  function byId(id) {
    return document.getElementById(id);
  }

  // -- Undo on the newest compaction bubble -----------------------------------------

  function showLatestUndo() {
    var forms = document.querySelectorAll("#messages [data-undo-form]");
    forms.forEach(function (form, i) {
      form.hidden = i !== forms.length - 1;
    });
  }

  document.addEventListener("htmx:wsConfigSend", function (event) {
    var form = event.target;
    if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-undo-form")) return;
    var button = form.querySelector("[data-undo]");
    if (button) button.disabled = true; // once; a refusal's notice says why
    setTimeout(function () {
      if (document.body.contains(button)) button.disabled = false;
    }, 5000);
  });

  // -- the message list again, from the page's own address ----------------------------

  var reloading = false;

  function reloadHistory() {
    var messages = byId("messages");
    if (!messages || !window.htmx || reloading) return;
    var scroller = byId("scroller");
    var atBottom = scroller ? scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 80 : true;
    reloading = true;
    window.htmx
      .ajax("GET", window.location.pathname + window.location.search, {
        target: "#messages",
        select: "#messages",
        swap: "outerHTML",
      })
      .then(function () {
        reloading = false;
        showLatestUndo();
        if (atBottom && scroller) scroller.scrollTop = scroller.scrollHeight;
      }, function () {
        reloading = false;
      });
  }

  document.addEventListener("netaclaw:history-changed", reloadHistory);

  document.addEventListener("htmx:wsAfterMessage", function () {
    var signals = document.querySelectorAll("#notices [data-history-refresh]");
    if (signals.length) {
      signals.forEach(function (signal) {
        signal.remove();
      });
      reloadHistory();
    }
    showLatestUndo();
    document.querySelectorAll("[data-progress-text]").forEach(function (text) {
      text.scrollTop = text.scrollHeight;
    });
  });

  document.addEventListener("htmx:afterSettle", showLatestUndo);
  document.addEventListener("DOMContentLoaded", showLatestUndo);

  // -- the live summary survives a re-rendered compaction status ----------------------

  document.addEventListener("htmx:oobBeforeSwap", function (event) {
    var target = event.detail.target;
    var fragment = event.detail.fragment;
    if (!target || target.id !== "compaction-status" || !fragment || !fragment.querySelector) return;
    var current = byId("compaction-progress");
    var incoming = fragment.querySelector("#compaction-progress");
    if (!current || current.hidden || !incoming || !incoming.hidden) return;
    if (!fragment.querySelector("#compaction-pending")) return; // the compaction has ended
    incoming.replaceWith(current.cloneNode(true));
  });

  // -- frames for what this page does not show ----------------------------------------

  var IN_PLACE = /^(msg-\d+|compaction-progress)$/;
  var UPDATE = /<[a-z]+\b[^>]*\bid="(msg-\d+|compaction-progress)"[^>]*\bhx-swap-oob="true"/;

  if (window.htmx && typeof window.htmx.defineExtension === "function") {
    window.htmx.defineExtension("netaclaw-missing-updates", {
      transformResponse: function (text, xhr) {
        if (xhr || !UPDATE.test(text)) return text; // socket frames only
        var template = document.createElement("template");
        template.innerHTML = text;
        var dropped = false;
        Array.prototype.slice.call(template.content.children).forEach(function (child) {
          var oob = child.getAttribute("hx-swap-oob");
          if (IN_PLACE.test(child.id) && oob === "true" && !byId(child.id)) {
            child.remove();
            dropped = true;
          }
        });
        return dropped ? template.innerHTML : text;
      },
    });
    var root = document.documentElement;
    var listed = root.getAttribute("hx-ext");
    if (!listed || listed.indexOf("netaclaw-missing-updates") < 0) {
      root.setAttribute("hx-ext", listed ? listed + ", netaclaw-missing-updates" : "netaclaw-missing-updates");
    }
  }
})();

/* --- compaction preview (issue 17 item 6) ---
 * "/compact --preview [focus]" and the status line's Preview button send
 * {"type": "compact", "sessionId", "preview": true, "instructions"?}. compaction_preview
 * swaps the preview drawer into #summary-drawer (preview_drawer.html); its Accept and
 * Discard submit the hidden #preview-accept-form {"type": "preview_accept", "sessionId",
 * "previewId", "summary"} and #preview-discard-form {"type": "preview_discard", "sessionId",
 * "previewId"} (the drawer is outside the socket's element). Once either is sent the drawer
 * closes; an accept's bubble then arrives in #messages. A compaction applied meanwhile
 * closes it too: the preview no longer stands for the history.
 */
(function () {
  "use strict";

  function byId(id) {
    return document.getElementById(id);
  }

  function previewDrawer() {
    var root = byId("summary-drawer");
    if (!root || root.getAttribute("data-open") !== "true") return null;
    return root.hasAttribute("data-preview-id") ? root : null;
  }

  function closePreview() {
    var root = previewDrawer();
    var close = root && root.querySelector("[data-close-drawer]");
    if (!close) return;
    close.click(); // the summary drawer's own closing
    var input = byId("chat-input");
    if (input && !input.disabled) input.focus();
  }

  document.addEventListener("htmx:wsAfterSend", function (event) {
    var form = event.target;
    if (form && (form.id === "preview-accept-form" || form.id === "preview-discard-form")) {
      closePreview();
    }
  });

  document.addEventListener("htmx:wsAfterMessage", function (event) {
    var compact = byId("compact-button");
    var preview = byId("compact-preview-button");
    if (compact && preview) preview.disabled = compact.disabled; // a chat started here
    var root = previewDrawer();
    if (!root) return;
    var message = String((event.detail && event.detail.message) || "");
    if (message.indexOf('data-event="compaction_done"') >= 0) {
      closePreview();
      return;
    }
    if (root.dataset.focused) return;
    root.dataset.focused = "1";
    var field = root.querySelector("textarea") || root.querySelector('[role="dialog"]');
    if (field) field.focus();
  });
})();
