// The page talks to the same /v1 API as every client: explain for a search (it carries the
// plan, its reasons, each retriever's list and every fusion term) beside the same recall (for
// each hit's calibrated confidence, which explain does not carry), browse and forget.
"use strict";

const $ = (id) => document.getElementById(id);
let oldest = null;

// The key and namespace outlive a reload in this tab, where the browser keeps storage; where
// it refuses (storage blocked), the page works without it.
const kept = {
  get(name) { try { return sessionStorage.getItem(name); } catch { return null; } },
  set(name, value) { try { sessionStorage.setItem(name, value); } catch { /* not kept */ } },
};

for (const field of ["key", "namespace"]) {
  $(field).value = kept.get(field) || "";
  $(field).addEventListener("change", () => {
    kept.set(field, $(field).value);
    browse(true);
  });
}

async function api(method, path, body) {
  const headers = { "content-type": "application/json" };
  const keyed = Boolean($("key").value);
  if (keyed) headers.authorization = "Bearer " + $("key").value;
  const response = await fetch(path, { method, headers, body: body && JSON.stringify(body) });
  // What the key field asks for is learnt from the server's answers: a 401 to a request
  // without a key says this server has keys; a success without one says it has none.
  if (!keyed && response.status === 401) $("key").placeholder = "required by this server";
  else if (!keyed && response.ok) $("key").placeholder = "none needed on this server";
  if (response.status === 204) return null;
  const data = await response.json();
  if (!response.ok) throw new Error(data.error ? data.error.message : response.statusText);
  return data;
}

function scope() {
  return $("namespace").value ? { namespace: $("namespace").value } : {};
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function status(text, isError) {
  $("status").textContent = text;
  $("status").className = isError ? "error" : "";
}

// An error said before a request that then succeeded (no key, then the key typed) is stale.
function cleared() {
  if ($("status").className === "error") status("");
}

// The plan's feature codes (its "features ed=1.00 ..." reason): a feature's initials, or the
// first four letters of a one-word name (specificity: spec).
function featureCode(name) {
  const words = name.split("_");
  return words.length > 1 ? words.map((w) => w[0]).join("") : name.slice(0, 4);
}

function showFeatures(features) {
  const entries = Object.entries(features).map(([name, value]) => {
    const entry = element("span", undefined, "feature");
    entry.dataset.code = featureCode(name);
    entry.append(element("b", featureCode(name)), ` ${name.replaceAll("_", " ")} ${value.toFixed(2)}`);
    return entry;
  });
  $("features").replaceChildren(...entries);
  return entries.map((entry) => entry.textContent).join(" · ");
}

function showPlan(explanation) {
  $("plan").hidden = false;
  $("plan-name").textContent = explanation.plan.name;
  const legend = showFeatures(explanation.features);
  $("reasons").replaceChildren(...explanation.plan.reasons.map((reason) => {
    const item = element("li", reason);
    if (reason.startsWith("features ")) item.title = legend;
    return item;
  }));
  const legs = explanation.runs.map((run) => `${run.name}: ${run.items.length} in ${run.elapsed_ms.toFixed(1)} ms`);
  $("legs").textContent = legs.join(" · ");
}

function fusionTable(hit) {
  const table = element("table");
  const head = element("tr");
  for (const name of ["retriever", "rank", "confidence", "weight", "contribution"]) head.append(element("th", name));
  table.append(head);
  for (const term of hit.terms) {
    const row = element("tr");
    row.append(element("td", term.retriever), element("td", String(term.rank)),
      element("td", term.confidence.toFixed(3)), element("td", term.weight.toFixed(2)),
      element("td", term.contribution.toFixed(5)));
    table.append(row);
  }
  const details = element("details");
  details.append(element("summary", `fused ${hit.fused.toFixed(5)} · importance ${hit.importance.toFixed(2)}`), table);
  return details;
}

function showHit(hit, confidence) {
  const item = element("li", undefined, hit.demoted ? "demoted" : "");
  item.dataset.id = hit.id;
  const score = element("span", hit.final.toFixed(5), "score");
  score.title = "final score: the fused score weighed by importance (ranks the hits)";
  const sure = element("span", confidence === undefined ? "confidence –" : `confidence ${confidence.toFixed(2)}`, "confidence");
  sure.title = "calibrated estimate, 0 to 1, that this memory answers the query";
  item.append(score, sure);
  for (const term of hit.terms) item.append(element("span", `${term.retriever} #${term.rank}`, "leg"));
  item.append(element("p", hit.content, "content"), fusionTable(hit));
  return item;
}

$("search").addEventListener("submit", async (event) => {
  event.preventDefault();
  status("searching…");
  try {
    const asked = { query: $("query").value, k: Number($("k").value), ...scope() };
    const [explanation, recalled] = await Promise.all([
      api("POST", "/v1/explain", asked), api("POST", "/v1/recall", asked),
    ]);
    const confidence = new Map(recalled.hits.map((hit) => [hit.memory.id, hit.confidence]));
    showPlan(explanation);
    $("results").replaceChildren(...explanation.hits.map((hit) => showHit(hit, confidence.get(hit.id))));
    await noteSuperseded(explanation.hits);
    const engineMs = Object.values(explanation.timings).reduce((a, b) => a + b, 0);
    status(`${explanation.hits.length} memories in ${engineMs.toFixed(1)} ms of engine time`);
  } catch (error) {
    status(error.message, true);
  }
});

// Explain's hits carry no history: each hit's memory is read for the one that superseded it.
async function noteSuperseded(hits) {
  const params = new URLSearchParams(scope());
  const memories = await Promise.all(hits.map((hit) => api("GET", `/v1/memories/${hit.id}?${params}`).catch(() => null)));
  for (const memory of memories) {
    if (!memory || memory.superseded_by == null) continue;
    const since = memory.valid_to ? ` (${memory.valid_to.slice(0, 10)})` : "";
    const item = $("results").querySelector(`li[data-id='${memory.id}']`);
    if (item) item.append(element("p", `superseded by #${memory.superseded_by}${since}`, "superseded"));
  }
}

function showMemory(memory) {
  const item = element("li");
  item.dataset.id = memory.id;
  const text = element("div");
  text.append(element("div", memory.content), element("div", `#${memory.id} · ${memory.type} · ${memory.created_at.slice(0, 19)}`, "meta"));
  const forget = element("button", "Forget");
  forget.type = "button";
  forget.addEventListener("click", async () => {
    try {
      const params = new URLSearchParams(scope());
      await api("DELETE", `/v1/memories/${memory.id}?${params}`);
      // The list may have been drawn again while the request ran: remove its row, not only this one.
      for (const row of $("memories").querySelectorAll(`li[data-id='${memory.id}']`)) row.remove();
      item.remove();
      status(`forgot memory #${memory.id}`);
    } catch (error) {
      status(error.message, true);
    }
  });
  item.append(text, forget);
  return item;
}

// Each browse is numbered: only the latest one draws (a key typed, then Refresh, sends two).
let browsing = 0;

async function browse(reset) {
  const params = new URLSearchParams({ limit: "25", ...scope() });
  if (!reset && oldest !== null) params.set("before", String(oldest));
  const mine = ++browsing;
  try {
    const memories = await api("GET", `/v1/memories?${params}`);
    if (mine !== browsing) return;
    const items = memories.map(showMemory);
    if (reset) $("memories").replaceChildren(...items); else $("memories").append(...items);
    oldest = memories.length ? memories[memories.length - 1].id : oldest;
    $("more").hidden = memories.length < 25;
    cleared();
  } catch (error) {
    if (mine === browsing) status(error.message, true);
  }
}

$("refresh").addEventListener("click", () => browse(true));
$("more").addEventListener("click", () => browse(false));
browse(true);
