// The capability browser: lists the operations a token may call by category, and ranks
// them against a plain-language request through GET /v1/capabilities (searchCapabilities),
// the same search the MCP search_capabilities tool runs. The token stays in this tab's
// sessionStorage; every text from the server goes into the page as text, never as HTML.
(function () {
  "use strict";
  const TOKEN_KEY = "memory-bank.token";
  const SEARCH_LIMIT = 20;
  const DEBOUNCE_MS = 250;

  const tokenInput = document.getElementById("token");
  const queryInput = document.getElementById("query");
  const statusLine = document.getElementById("status");
  const results = document.getElementById("results");
  let latest = 0;
  let timer = null;

  function element(tag, className, text) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A spec's prose marks names as `code`: shown as code, still set as text, never parsed as HTML.
  // An unmatched backtick stays a backtick.
  function prose(tag, className, text) {
    const node = element(tag, className);
    const parts = text.split("`");
    if (parts.length % 2 === 0) {
      const tail = parts.pop();
      parts.push(parts.pop() + "`" + tail);
    }
    parts.forEach(function (part, index) {
      node.append(index % 2 ? element("code", null, part) : part);
    });
    return node;
  }

  function say(message, isError) {
    statusLine.textContent = message;
    statusLine.classList.toggle("error", Boolean(isError));
  }

  function renderCard(card) {
    const item = element("li", "card");
    item.dataset.name = card.name;
    const header = element("header");
    const name = element("a", "name", card.name);
    name.href = "redoc#operation/" + encodeURIComponent(card.name);
    header.append(name, element("span", "title", card.title));
    header.append(element("span", "category", card.category));
    header.append(element("span", "permission", card.permission));
    if (card.score !== null) header.append(element("span", "score", "score " + card.score.toFixed(2)));
    item.append(header, prose("p", "summary", card.summary));
    if (card.required.length) {
      const required = element("div", "required", "Required: ");
      card.required.forEach(function (argument, index) {
        if (index) required.append(", ");
        required.append(element("code", null, argument));
      });
      item.append(required);
    }
    return item;
  }

  function renderByCategory(cards) {
    const groups = new Map();
    cards.forEach(function (card) {
      if (!groups.has(card.category)) groups.set(card.category, []);
      groups.get(card.category).push(card);
    });
    groups.forEach(function (members, category) {
      const section = element("section");
      section.dataset.category = category;
      const list = element("ol");
      members.forEach(function (card) { list.append(renderCard(card)); });
      section.append(element("h2", null, category), list);
      results.append(section);
    });
  }

  function renderRanked(cards) {
    const list = element("ol", "ranked");
    cards.forEach(function (card) { list.append(renderCard(card)); });
    results.append(list);
  }

  // The best fit that the cards leave out, and why: as the MCP text says it.
  function withheldNote(withheld) {
    if (!withheld) return "";
    const why = withheld.reason === "not_exposed"
      ? " is HTTP only: " + withheld.route + " (with " + withheld.permission + ")"
      : " needs " + withheld.permission + ", which this token lacks";
    return ". The best fit, " + withheld.name + "," + why + "; none of these does it.";
  }

  async function search() {
    const token = sessionStorage.getItem(TOKEN_KEY);
    results.replaceChildren();
    if (!token) {
      say("Paste a bearer token above (memory-bank token create ...) to see what it may call.");
      return;
    }
    const query = queryInput.value.trim();
    const params = new URLSearchParams();
    if (query) {
      params.set("q", query);
      params.set("limit", String(SEARCH_LIMIT));
    }
    const ticket = ++latest;
    say(query ? "Searching..." : "Loading the catalog...");
    let response;
    try {
      response = await fetch("v1/capabilities?" + params, { headers: { Authorization: "Bearer " + token } });
    } catch (error) {
      if (ticket === latest) say("The server could not be reached: " + error.message, true);
      return;
    }
    const body = await response.json().catch(function () { return {}; });
    if (ticket !== latest) return; // a newer keystroke already asked
    if (!response.ok) {
      say("Refused (" + (body.code || response.status) + "): " + (body.detail || response.statusText), true);
      return;
    }
    say(query
      ? body.results.length + " best match(es) for \u201c" + query + "\u201d among " + body.total + " operation(s)" + withheldNote(body.withheld)
      : body.total + " operation(s) this token may call, by category");
    (query ? renderRanked : renderByCategory)(body.results);
  }

  function searchSoon() {
    clearTimeout(timer);
    timer = setTimeout(search, DEBOUNCE_MS);
  }

  document.getElementById("token-form").addEventListener("submit", function (event) {
    event.preventDefault();
    const token = tokenInput.value.trim();
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    search();
  });
  document.getElementById("forget").addEventListener("click", function () {
    sessionStorage.removeItem(TOKEN_KEY);
    tokenInput.value = "";
    search();
  });
  queryInput.addEventListener("input", searchSoon);
  tokenInput.value = sessionStorage.getItem(TOKEN_KEY) || "";
  search();
})();
