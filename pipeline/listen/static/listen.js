"use strict";
// The listener's page: one trial at a time. An answer can be given once every recording of the trial has been
// played to its end (the server checks it too); every text is set as text, never as HTML. The session starts
// here, with a POST: opening the link (a reload, a link previewer) makes nothing on the server.
let sessionToken = "";
const $ = (id) => document.getElementById(id);

function newId() {
  const bytes = new Uint8Array(18);
  crypto.getRandomValues(bytes);
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function post(path, body) {
  for (let attempt = 0; ; attempt++) {  // the same body again after a lost answer: the server keeps it once
    try {
      const r = await fetch(path, {method: "POST", credentials: "same-origin",
        headers: {"content-type": "application/json", "x-session-token": sessionToken}, body: JSON.stringify(body)});
      if (r.status < 500) return r;
    } catch (e) { /* the network: try again */ }
    if (attempt >= 20) throw new Error("the server does not answer");
    await new Promise((resolve) => setTimeout(resolve, Math.min(200 * 2 ** attempt, 5000)));
  }
}

// Each kind's answer widget, by the name its page gives (kinds/base.py `widget`): it draws its controls into
// `answers`, disabled until every recording of the trial is heard, and calls `submit(value)` with the answer;
// it returns the function that enables or disables its controls.
const WIDGETS = {
  scale(t, answers, submit) {
    const buttons = t.scale.map(([value, label]) => {
      const b = document.createElement("button");
      b.textContent = label;
      b.dataset.value = value;
      b.addEventListener("click", () => submit(value));
      answers.append(b);
      return b;
    });
    keys = (key) => {  // a scale's own value where it is a digit (MOS: 5 is Excellent), else the n-th answer
      const chosen = buttons.find((b) => b.dataset.value === key) || buttons[Number(key) - 1];
      if (chosen && !chosen.disabled) chosen.click();
    };
    return (on) => buttons.forEach((b) => { b.disabled = !on; });
  },
  text(t, answers, submit) {  // what the listener heard, typed: Enter submits, and the field keeps the focus
    const form = document.createElement("form"), field = document.createElement("input");
    const send = document.createElement("button");
    field.type = "text";
    field.id = "typed";
    field.maxLength = t.max_chars;
    field.autocomplete = "off";
    field.spellcheck = false;
    field.setAttribute("aria-label", t.title);
    send.type = "submit";
    send.textContent = "Submit";
    form.addEventListener("submit", (e) => { e.preventDefault(); submit(field.value); });
    form.append(field, send);
    answers.append(form);
    return (on) => {
      field.disabled = send.disabled = !on;
      if (on) field.focus();
    };
  },
};

let keys = () => {};  // what a number key does on this trial
document.addEventListener("keydown", (e) => {
  if (/^[0-9]$/.test(e.key) && !(e.target instanceof HTMLInputElement)) keys(e.key);
});

async function next() {
  const r = await fetch("/api/trial", {credentials: "same-origin"});
  const t = await r.json();
  const clips = $("clips"), answers = $("answers");
  clips.replaceChildren();
  answers.replaceChildren();
  if (t.error) { $("status").textContent = t.error; return; }
  keys = () => {};
  if (t.done) {
    $("progress").textContent = "";
    $("bar").value = $("bar").max = 1;
    $("title").textContent = `Thank you: every trial is answered. Your completion code: ${t.code}`;
    document.body.dataset.done = "1";
    return;
  }
  $("bar").max = t.total;
  $("bar").value = t.position - 1;
  $("progress").textContent = `Trial ${t.position} of ${t.total}` + (t.practice ? " (practice)" : "");
  $("title").textContent = t.title;
  const played = new Set(), ended = Object.fromEntries(t.clips.map((id) => [id, 0]));
  const widget = WIDGETS[t.widget];
  if (!widget) { $("status").textContent = "This page cannot show this test's answers: reload it."; return; }
  const enable = widget(t, answers, (value) => answer(t.trial, value, enable));
  enable(false);
  t.clips.forEach((id, i) => {
    const row = document.createElement("div"), name = document.createElement("span");
    const a = document.createElement("audio");
    row.className = "clip";
    name.textContent = t.names[i];
    a.controls = true;
    a.preload = "auto";
    a.src = `/audio/${id}`;
    a.dataset.clip = id;
    let reached = 0;  // no skipping ahead: a recording counts as heard when it was played to its end
    a.addEventListener("timeupdate", () => { if (!a.seeking) reached = Math.max(reached, a.currentTime); });
    a.addEventListener("seeking", () => { if (a.currentTime > reached + 0.5) a.currentTime = reached; });
    a.addEventListener("play", async () => {
      const r = await post("/api/play", {trial: t.trial, clip: id, event: "play"});
      if (r.status === 409) {  // played as often as the test allows: the server refuses, and so does the page
        a.pause();
        a.controls = false;
        $("status").textContent = (await r.json()).error;
      }
    });
    a.addEventListener("ended", async () => {
      const r = await post("/api/play", {trial: t.trial, clip: id, event: "ended"});
      if (!r.ok || !(await r.json()).heard) {  // the server's record decides, as it will for the vote
        $("status").textContent = "Please play the recording to its end.";
        return;
      }
      $("status").textContent = "";
      played.add(id);
      if (t.plays && ++ended[id] >= t.plays) a.controls = false;
      if (played.size === t.clips.length) enable(true);
    });
    row.append(name, a);
    clips.append(row);
  });
}

async function answer(trial, value, enable) {
  enable(false);
  const r = await post("/api/vote", {trial, value, submission: newId()});
  if (!r.ok) { $("status").textContent = (await r.json()).error; enable(true); return; }
  $("status").textContent = "";
  next();
}

async function start() {
  const r = await fetch(`${location.pathname.replace(/\/$/, "")}/start`, {method: "POST", credentials: "same-origin"});
  if (!r.ok) { $("status").textContent = (await r.json()).error; return; }
  sessionToken = (await r.json()).token;
  next();
}

start();
