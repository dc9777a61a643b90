// The sample browser: filters by run, task, verdict, source and instance id, shown a page
// at a time. Filters live in the URL's hash too, so a filtered view can be linked to.
(function () {
  "use strict";
  const data = JSON.parse(document.getElementById("sample-data").textContent);
  const PAGE = 50;
  const selects = Array.from(document.querySelectorAll("#filters select"));
  const search = document.getElementById("filter-instance");
  const list = document.getElementById("samples");
  const count = document.getElementById("sample-count");
  const more = document.getElementById("more");
  let shown = 0;
  let matching = [];

  for (const select of selects) {
    const values = Array.from(new Set(data.samples.map((s) => s[select.dataset.key]))).sort();
    for (const value of values) {
      const option = document.createElement("option");
      option.value = option.textContent = value;
      select.appendChild(option);
    }
    select.addEventListener("change", () => { update(); remember(); });
  }
  search.addEventListener("input", () => { update(); remember(); });

  function part(tag, text, className) {
    const node = document.createElement(tag);
    node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  function card(s) {
    const node = document.createElement("article");
    node.className = "sample " + s.verdict;
    const title = part("h4", s.instance + " · sample " + s.sample + " · " + s.run + " · ");
    title.appendChild(part("span", s.verdict, "verdict"));
    node.appendChild(title);
    const facts = document.createElement("dl");
    for (const [name, value] of [["answer", s.answer], ["truth", s.truth], ["detail", s.detail],
                                 ["source", s.source]]) {
      if (value === null || value === undefined || value === "") continue;
      facts.appendChild(part("dt", name));
      facts.appendChild(part("dd", String(value)));
    }
    node.appendChild(facts);
    for (const [name, text, open] of [["prompt", data.prompts[s.prompt], false],
                                      ["response", s.response, true]]) {
      const box = document.createElement("details");
      box.open = open;
      box.appendChild(part("summary", name));
      box.appendChild(part("pre", text));
      node.appendChild(box);
    }
    return node;
  }

  function showMore() {
    const next = matching.slice(shown, shown + PAGE);
    for (const s of next) list.appendChild(card(s));
    shown += next.length;
    more.hidden = shown >= matching.length;
  }

  function update() {
    const wanted = selects.map((select) => [select.dataset.key, select.value]);
    const prefix = search.value.trim();
    matching = data.samples.filter((s) =>
      wanted.every(([key, value]) => !value || s[key] === value) &&
      (!prefix || s.instance.startsWith(prefix)));
    list.replaceChildren();
    shown = 0;
    showMore();
    count.textContent = matching.length + " of " + data.samples.length + " samples match";
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
  window.addEventListener("hashchange", () => { recall(); update(); });
  recall();
  update();
  document.body.dataset.ready = "yes";
})();
