// The sample browser. The samples come packed (gzip, base64; see browser_data.py) and are
// unpacked with the browser's own DecompressionStream. They are listed in the order the
// data gives (wrong or unreadable answers first, ids in natural order). Filters by run,
// task, verdict, source and instance id (`execbench show`'s flags, all of them applied
// together) show a page of one-line rows at a time, and the `show` command that lists the
// same samples is written out; a sample's answer, truth, prompt and response are built
// only when its row is opened, so even 50,000 samples cost the page little. Filters live
// in the URL's hash too, so a filtered view can be linked to.
(async function () {
  "use strict";
  const count = document.getElementById("sample-count");
  let data;
  try {
    const packed = document.getElementById("sample-data").textContent.trim();
    const bytes = Uint8Array.from(atob(packed), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    data = JSON.parse(await new Response(stream).text());
  } catch (error) {
    count.textContent = "The samples cannot be unpacked in this browser: " + error;
    document.body.dataset.ready = "yes";
    return;
  }
  const at = Object.fromEntries(data.columns.map((name, i) => [name, i]));
  const samples = data.order.map(([run, row]) => ({
    run: data.runs[run].label, dir: data.runs[run].dir, row: data.runs[run].rows[row],
    instance: data.instances[data.runs[run].rows[row][at.instance]]}));
  const read = {
    run: (s) => s.run,
    task: (s) => s.instance[1],
    source: (s) => s.instance[2],
    verdict: (s) => s.row[at.verdict],
  };
  const PAGE = 50;
  const selects = Array.from(document.querySelectorAll("#filters select"));
  const search = document.getElementById("filter-instance");
  const command = document.getElementById("filter-command");
  const list = document.getElementById("samples");
  const natural = new Intl.Collator("en", {numeric: true}).compare;
  const more = document.getElementById("more");
  let shown = 0;
  let matching = [];

  for (const select of selects) {
    const values = Array.from(new Set(samples.map(read[select.dataset.key]))).sort(natural);
    for (const value of values) {
      const option = document.createElement("option");
      option.value = option.textContent = value;
      select.appendChild(option);
    }
    select.addEventListener("change", () => { update(); remember(); });
  }
  search.addEventListener("input", () => { update(); remember(); });
  if (data.runs.length < 2) document.getElementById("filter-run").parentElement.hidden = true;

  function quoted(word) {
    return /^[\w@%+=:,.\/-]+$/.test(word) ? word : "'" + word.replace(/'/g, "'\\''") + "'";
  }

  function described() {
    // `execbench show` reads one run: with several runs and none chosen, RUN stands for each
    const run = document.getElementById("filter-run").value;
    const dir = run ? samples.find((s) => s.run === run).dir
                    : data.runs.length === 1 ? data.runs[0].dir : "RUN";
    const words = ["execbench", "show", dir];
    for (const select of selects) {
      if (select.dataset.key !== "run" && select.value) words.push("--" + select.dataset.key, select.value);
    }
    if (search.value.trim()) words.push("--instance", search.value.trim());
    return words.map((word) => word === "RUN" ? word : quoted(word)).join(" ");
  }

  function part(tag, text, className) {
    const node = document.createElement(tag);
    node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  function details(node, s) {
    const row = s.row;
    const facts = document.createElement("dl");
    for (const [name, value] of [["answer", row[at.answer]], ["truth", s.instance[3]],
                                 ["detail", row[at.detail]], ["source", s.instance[2]]]) {
      if (value === null || value === undefined || value === "") continue;
      facts.appendChild(part("dt", name));
      facts.appendChild(part("dd", String(value)));
    }
    node.appendChild(facts);
    for (const [name, text, open] of [["prompt", data.prompts[row[at.prompt]], false],
                                      ["response", row[at.response], true]]) {
      const box = document.createElement("details");
      box.open = open;
      box.appendChild(part("summary", name));
      box.appendChild(part("pre", text));
      node.appendChild(box);
    }
  }

  function clipped(value) {
    const text = value === null || value === undefined ? "none" : String(value);
    const line = text.replace(/\s+/g, " ");
    return line.length > 60 ? line.slice(0, 59) + "…" : line;
  }

  function gist(s) {
    // a wrong row says what was answered and what was right without being opened
    const answer = s.row[at.answer], detail = s.row[at.detail];
    const said = answer === null || answer === undefined || answer === "" ? (detail || "no answer")
                                                                          : answer;
    return " · answer " + clipped(said) + " · truth " + clipped(s.instance[3]);
  }

  function item(s) {
    const verdict = s.row[at.verdict];
    const node = document.createElement("details");
    node.className = "sample " + verdict;
    const title = part("summary", s.instance[0] + " · sample " + s.row[at.sample] + " · " +
                       s.run + " · ");
    title.appendChild(part("span", verdict, "verdict"));
    if (verdict !== "correct") title.appendChild(part("span", gist(s), "gist"));
    node.appendChild(title);
    node.addEventListener("toggle", () => {
      if (node.open && node.childElementCount === 1) details(node, s);
    });
    return node;
  }

  function showMore() {
    const next = matching.slice(shown, shown + PAGE);
    for (const s of next) list.appendChild(item(s));
    shown += next.length;
    more.hidden = shown >= matching.length;
  }

  function update() {
    const wanted = selects.map((select) => [read[select.dataset.key], select.value]);
    const prefix = search.value.trim();
    matching = samples.filter((s) =>
      wanted.every(([key, value]) => !value || key(s) === value) &&
      (!prefix || s.instance[0].startsWith(prefix)));
    list.replaceChildren();
    shown = 0;
    showMore();
    count.textContent = matching.length + " of " + samples.length + " samples match";
    command.textContent = described();
  }

  function remember() {
    const params = new URLSearchParams();
    for (const select of selects) if (select.value) params.set(select.dataset.key, select.value);
    if (search.value.trim()) params.set("instance", search.value.trim());
    history.replaceState(null, "", params.toString() ? "#" + params : location.pathname);
  }

  function recall() {
    const params = new URLSearchParams(location.hash.slice(1));
    for (const select of selects) select.value = params.get(select.dataset.key) || "";
    search.value = params.get("instance") || "";
  }

  more.addEventListener("click", showMore);
  window.addEventListener("hashchange", () => {
    recall(); update();
    document.getElementById("browser").scrollIntoView();  // a link from "What went wrong"
  });
  recall();
  update();
  document.body.dataset.ready = "yes";
})();
