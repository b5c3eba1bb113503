// The chat page: one event stream in, plain fetches out. No inline script, no eval,
// no markup built from strings the page did not get from the server's sanitizer.
"use strict";
(() => {
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const log = document.getElementById("log");
  const form = document.getElementById("composer");
  const text = document.getElementById("text");
  const picker = document.getElementById("picker");
  const fileList = document.getElementById("files");
  const problem = document.getElementById("problem");
  const stop = document.getElementById("stop");
  const link = document.getElementById("link");
  const latest = document.getElementById("latest");
  const hello = document.getElementById("hello");
  const agent = document.getElementById("agent");
  const turns = new Map();
  const questions = new Map();
  let pending = [];

  const nearBottom = () => log.scrollHeight - log.scrollTop - log.clientHeight < 80;
  // Whether the page follows the conversation: set by where the person scrolls, never by
  // content growing under them (a notice filled in after it was placed, an image that
  // loads late), so a long notice does not leave every later message below the fold.
  let following = true;

  function follow() {
    hello.hidden = log.childElementCount > 0;
    if (following) {
      log.scrollTop = log.scrollHeight;
    } else {
      latest.hidden = false;
    }
  }
  log.addEventListener("scroll", () => {
    following = nearBottom();
    if (following) latest.hidden = true;
  });
  latest.addEventListener("click", () => {
    following = true;
    latest.hidden = true;
    log.scrollTop = log.scrollHeight;
  });

  function node(tag, cls) {
    const made = document.createElement(tag);
    if (cls) made.className = cls;
    return made;
  }

  function add(child) {
    return log.appendChild(child);
  }

  // When it was said, in the reader's own time (the server sends UTC).
  function stamp(item, at) {
    if (!at) return;
    const when = new Date(at);
    if (Number.isNaN(when.getTime())) return;
    // Shown by the style sheet (::after), so it is never part of the message's text.
    item.dataset.time = when.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    item.title = when.toLocaleString();
  }

  // A light highlighter for code blocks: comments, strings, numbers and common keywords,
  // built as text nodes (never markup from the model's text).
  const KEYWORDS = new Set((
    "def class return if elif else for while in import from as with try except finally " +
    "raise async await yield lambda pass break continue not and or is None True False " +
    "function const let var new this typeof instanceof switch case default throw catch " +
    "export extends null undefined true false fn pub struct impl enum match use mod " +
    "package func go chan select type interface map public private static void int"
  ).split(" "));
  const TOKEN = /(#[^\n]*|\/\/[^\n]*|\/\*[\s\S]*?\*\/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`|\b\d+(?:\.\d+)?\b|\b[A-Za-z_]\w*\b)/g;

  function highlight(code) {
    const source = code.textContent;
    const out = document.createDocumentFragment();
    let last = 0;
    for (const match of source.matchAll(TOKEN)) {
      const [word] = match;
      let kind = null;
      if (/^(#|\/\/|\/\*)/.test(word)) kind = "c";
      else if (/^["'`]/.test(word)) kind = "s";
      else if (/^\d/.test(word)) kind = "n";
      else if (KEYWORDS.has(word)) kind = "k";
      if (!kind) continue;
      out.append(source.slice(last, match.index));
      const span = node("span", `tok-${kind}`);
      span.textContent = word;
      out.append(span);
      last = match.index + word.length;
    }
    out.append(source.slice(last));
    code.replaceChildren(out);
  }

  // Code blocks get highlighting and a copy button once the answer is whole.
  function decorate(item) {
    for (const pre of item.querySelectorAll("pre")) {
      const code = pre.querySelector("code");
      if (!code) continue;
      highlight(code);
      const copy = node("button", "copy");
      copy.type = "button";
      copy.textContent = "Copy";
      copy.addEventListener("click", async () => {
        try {
          await navigator.clipboard.writeText(code.textContent);
          copy.textContent = "Copied";
        } catch (error) {
          copy.textContent = "Select and copy";
        }
      });
      pre.prepend(copy);
    }
  }

  function busy(on) {
    stop.hidden = !on;
    document.body.classList.toggle("busy", on);
  }

  function turn(id) {
    let found = turns.get(id);
    if (!found) {
      found = add(node("div", "msg bot"));
      found.dataset.turn = id;
      turns.set(id, found);
    }
    return found;
  }

  function post(url, body, json) {
    const headers = { "X-CSRF-Token": csrf };
    if (json) headers["Content-Type"] = "application/json";
    return fetch(url, {
      method: "POST",
      headers,
      body: json ? JSON.stringify(body) : body,
      credentials: "same-origin",
    });
  }

  function say(message) {
    problem.textContent = message;
    problem.hidden = !message;
  }

  const handlers = {
    reset() {
      log.replaceChildren();
      turns.clear();
      questions.clear();
      busy(false);
    },
    user(data) {
      const item = add(node("div", "msg me"));
      item.innerHTML = data.html;
      for (const name of data.files || []) {
        const file = item.appendChild(node("span", "file"));
        file.textContent = name;
      }
      stamp(item, data.at);
    },
    turn(data) {
      turn(data.turn).classList.add("streaming");
      busy(true);
    },
    partial(data) {
      const item = turn(data.turn);
      if (item.classList.contains("final")) return;
      item.innerHTML = data.html;
    },
    final(data) {
      const item = turn(data.turn);
      item.innerHTML = data.html;
      item.classList.remove("streaming");
      item.classList.add("final");
      if (data.failed) item.classList.add("failed", data.failed);
      if (!item.textContent.trim()) item.classList.add("empty");
      decorate(item);
      stamp(item, data.at);
      busy(false);
    },
    activity(data) {
      add(node("div", "activity")).textContent = data.text;
    },
    notice(data) {
      const item = add(node("div", `notice ${data.tone}`));
      item.innerHTML = data.html;
      stamp(item, data.at);
    },
    image(data) {
      const figure = add(node("figure", "image"));
      if (data.url) {
        // Empty after a restart: the image went with the process, its caption stays.
        const img = figure.appendChild(node("img"));
        img.addEventListener("load", follow);
        img.src = data.url;
        img.alt = "an image a tool made";
      }
      figure.appendChild(node("figcaption")).innerHTML = data.caption;
    },
    audio(data) {
      const figure = add(node("figure", "audio"));
      if (data.url) {
        // Empty after a restart, as an image: the answer's text stays above it.
        const player = figure.appendChild(node("audio"));
        player.controls = true;
        player.preload = "metadata";
        player.src = data.url;
      }
      figure.appendChild(node("figcaption")).innerHTML = data.caption;
    },
    approval(data) {
      const box = add(node("div", "approval"));
      box.dataset.id = data.id;
      const ask = box.appendChild(node("p"));
      ask.innerHTML = `Allow <code>${data.tool}</code> <code class="args">${data.preview}</code>?`;
      const row = box.appendChild(node("div", "buttons"));
      for (const [verdict, label] of [
        ["approved", "Approve"],
        ["approved-session", "Approve for this session"],
        ["denied", "Deny"],
      ]) {
        const button = row.appendChild(node("button", verdict));
        button.type = "button";
        button.textContent = label;
        button.addEventListener("click", async () => {
          row.querySelectorAll("button").forEach((b) => { b.disabled = true; });
          const answer = await post("/api/approve", { id: data.id, verdict }, true);
          if (!answer.ok) {
            const body = await answer.json().catch(() => ({}));
            say(body.error || "That answer was not taken.");
          }
        });
      }
      questions.set(data.id, box);
    },
    approval_closed(data) {
      const box = questions.get(data.id);
      if (!box) return;
      box.querySelector(".buttons")?.remove();
      box.classList.add("closed");
      box.appendChild(node("p", "verdict")).textContent = data.text;
    },
  };

  function listen() {
    const stream = new EventSource("/api/events");
    stream.addEventListener("open", () => {
      link.textContent = "live";
      link.className = "link live";
    });
    stream.addEventListener("error", () => {
      if (stream.readyState === EventSource.CLOSED) {
        link.textContent = "disconnected — reload";
        link.className = "link down";
      } else {
        link.textContent = "reconnecting…";
        link.className = "link";
      }
    });
    for (const [kind, handle] of Object.entries(handlers)) {
      stream.addEventListener(kind, (event) => {
        handle(JSON.parse(event.data || "{}"));
        follow(); // once the event's content is in place, not before
      });
    }
  }

  function showFiles() {
    fileList.replaceChildren();
    pending.forEach((file, index) => {
      const item = fileList.appendChild(node("li"));
      item.textContent = file.name;
      const drop = item.appendChild(node("button", "remove"));
      drop.type = "button";
      drop.textContent = "×";
      drop.title = "remove";
      drop.addEventListener("click", () => {
        pending.splice(index, 1);
        showFiles();
      });
    });
  }

  async function send(words) {
    const body = new FormData();
    body.append("text", words);
    const files = words.startsWith("/") ? [] : pending;
    for (const file of files) body.append("files", file, file.name);
    say("");
    let answer;
    try {
      answer = await post("/api/send", body, false);
    } catch (error) {
      say("The bot could not be reached; try again in a moment.");
      return false;
    }
    if (answer.ok) {
      if (files.length) {
        pending = [];
        showFiles();
      }
      return true;
    }
    const reason = await answer.json().catch(() => ({}));
    if (answer.status === 401) {
      window.location.assign("/login");
      return false;
    }
    if (!reason.shown) say(reason.error || `Not sent (${answer.status}).`);
    return reason.shown === true;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const words = text.value;
    if (!words.trim() && !pending.length) return;
    if (await send(words)) text.value = "";
  });
  text.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  document.querySelectorAll("[data-command]").forEach((button) => {
    button.addEventListener("click", () => send(button.dataset.command));
  });
  stop.addEventListener("click", () => send("/cancel"));
  agent.addEventListener("change", () => send(`/new ${agent.value}`));
  picker.addEventListener("change", () => {
    pending = pending.concat(Array.from(picker.files));
    picker.value = "";
    showFiles();
  });
  document.addEventListener("dragover", (event) => {
    event.preventDefault();
    document.body.classList.add("dropping");
  });
  document.addEventListener("dragleave", () => document.body.classList.remove("dropping"));
  document.addEventListener("drop", (event) => {
    event.preventDefault();
    document.body.classList.remove("dropping");
    pending = pending.concat(Array.from(event.dataTransfer.files));
    showFiles();
  });
  document.getElementById("logout").addEventListener("click", async () => {
    await post("/logout", new FormData(), false);
    window.location.assign("/login");
  });

  listen();
})();
