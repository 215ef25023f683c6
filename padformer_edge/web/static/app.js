// The operator's page: live cards over server-sent events and the overlay slider.
// Plain DOM code, no build step. Text goes in with textContent, never as HTML.
"use strict";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function num(value) {
  return value === null || value === undefined ? "-" : String(Number(value.toPrecision(4)));
}

function buildCard(c) {
  const card = el("article", "card verdict-" + c.verdict);
  card.dataset.id = String(c.id);
  const pictures = el("a", "pictures");
  pictures.href = c.detail;
  if (c.elsewhere) {
    // Another line's PC keeps the picture: say where rather than show a broken image.
    pictures.appendChild(el("span", "elsewhere", "Picture on line " + c.elsewhere + "'s PC"));
  } else if (c.removed) {
    // This line's own picture, no longer on this PC: say so rather than show a broken image.
    pictures.appendChild(el("span", "elsewhere removed", "Picture no longer on this PC"));
  } else {
    const image = el("img", "image");
    image.src = c.thumb;
    // A refused file gets the server's icon (c.thumb), named as such for screen readers.
    image.alt = (c.verdict === "failed" ? "refused file " : "camera image ") + c.id;
    pictures.appendChild(image);
  }
  if (c.heatmap_thumb) {
    const heat = el("img", "heatmap");
    heat.src = c.heatmap_thumb;
    heat.alt = "heatmap " + c.id;
    pictures.appendChild(heat);
  }
  card.appendChild(pictures);
  const facts = el("div", "facts");
  facts.appendChild(el("span", "verdict", c.verdict));
  facts.appendChild(document.createTextNode(" "));
  facts.appendChild(el("span", "line", c.line));
  facts.appendChild(document.createTextNode(" · "));
  facts.appendChild(el("span", "camera", c.camera));
  facts.appendChild(document.createTextNode(" · "));
  facts.appendChild(el("span", "product", c.product));
  facts.appendChild(el("br"));
  facts.appendChild(el("span", "time", c.time));
  facts.appendChild(el("br"));
  facts.appendChild(el("span", "score", "score " + num(c.score) + " / threshold " + num(c.threshold)));
  card.appendChild(facts);
  return card;
}

// Anomalies first: the operator's choice, kept in this browser (on unless turned off).
const ORDER_KEY = "padformer-edge.anomaliesFirst";

function anomaliesFirst() {
  try {
    return window.localStorage.getItem(ORDER_KEY) !== "off";
  } catch (err) {
    return true; // storage refused (a locked-down browser): the safe order
  }
}

function rememberOrder(first) {
  try {
    window.localStorage.setItem(ORDER_KEY, first ? "on" : "off");
  } catch (err) {
    // storage refused: the choice holds until the page is left
  }
}

// Lay out the window's cards (elements in time order, newest first): with anomalies
// first, every anomaly goes in the strip above the rest, so no good card of the window
// is shown above one; otherwise all in time order in one grid.
function placeCards(strip, cards, list, first) {
  const top = first ? list.filter((c) => c.classList.contains("verdict-anomaly")) : [];
  strip.replaceChildren(...top);
  strip.hidden = top.length === 0;
  cards.replaceChildren(...list.filter((c) => !top.includes(c)));
}

function shownCards(strip, cards) {
  const all = [...strip.children, ...cards.children];
  return all.sort((a, b) => Number(a.dataset.rank) - Number(b.dataset.rank));
}

function startLive(cards) {
  const state = document.getElementById("stream-state");
  const strip = document.getElementById("anomaly-strip");
  const toggle = document.getElementById("anomalies-first");
  let first = anomaliesFirst();
  if (strip && toggle) {
    toggle.checked = first;
    placeCards(strip, cards, shownCards(strip, cards), first);
    toggle.addEventListener("change", () => {
      first = toggle.checked;
      rememberOrder(first);
      placeCards(strip, cards, shownCards(strip, cards), first);
    });
  }
  if (!window.EventSource) {
    state.textContent = "reload to update";
    return;
  }
  const source = new EventSource("/events");
  source.onopen = () => { state.textContent = "live"; state.className = "stream-state on"; };
  source.onerror = () => { state.textContent = "reconnecting…"; state.className = "stream-state"; };
  source.addEventListener("cards", (event) => {
    const list = JSON.parse(event.data);
    const built = list.map((c, rank) => {
      const card = buildCard(c);
      card.dataset.rank = String(rank);
      return card;
    });
    if (strip) placeCards(strip, cards, built, first);
    else cards.replaceChildren(...built);
    const empty = document.getElementById("empty");
    if (empty && list.length) empty.remove();
  });
}

function startSlider(slider) {
  const overlay = document.getElementById("overlay");
  const shown = document.getElementById("opacity-value");
  const apply = () => {
    overlay.style.opacity = String(slider.value / 100);
    shown.textContent = slider.value + "%";
  };
  slider.addEventListener("input", apply);
  apply();
}

// The daemon banner on every page: the server renders it, this keeps it current, so a
// page left open turns red when the daemon stops without anyone reloading it.
const DAEMON_POLL_MS = 5000;

function startDaemonState(banner) {
  const refresh = async () => {
    try {
      const reply = await fetch("/api/heartbeat", { cache: "no-store" });
      if (!reply.ok) throw new Error("HTTP " + reply.status);
      const daemon = await reply.json();
      banner.textContent = daemon.sentence;
      banner.className = "daemon daemon-" + daemon.state + (daemon.red ? " red" : "");
    } catch (err) {
      banner.textContent = "This page cannot reach its server (" + err.message + "); what it shows may be old.";
      banner.className = "daemon daemon-unreachable red";
    }
  };
  setInterval(refresh, DAEMON_POLL_MS);
}

document.addEventListener("DOMContentLoaded", () => {
  const banner = document.getElementById("daemon-state");
  if (banner) startDaemonState(banner);
  const cards = document.getElementById("cards");
  if (cards) startLive(cards);
  const slider = document.getElementById("opacity");
  if (slider) startSlider(slider);
});
