(function () {
  "use strict";
  var KEYS = ["category", "severity", "file"];
  var selects = {};
  KEYS.forEach(function (key) { selects[key] = document.getElementById("filter-" + key); });
  var findings = Array.prototype.slice.call(document.querySelectorAll("article.finding"));
  var counter = document.getElementById("filter-count");

  function hasOption(select, value) {
    return Array.prototype.some.call(select.options, function (o) { return o.value === value; });
  }

  function applyFilters() {
    var shown = 0;
    findings.forEach(function (el) {
      var visible = KEYS.every(function (key) {
        var wanted = selects[key].value;
        if (!wanted) { return true; }
        if (key === "file") {
          return (el.getAttribute("data-files") || "").split("|").indexOf(wanted) >= 0;
        }
        return el.getAttribute("data-" + key) === wanted;
      });
      el.hidden = !visible;
      if (visible) { shown += 1; }
    });
    if (counter) { counter.textContent = shown + " of " + findings.length + " causes shown"; }
  }

  function writeHash() {
    var parts = [];
    KEYS.forEach(function (key) {
      if (selects[key].value) {
        parts.push(key + "=" + encodeURIComponent(selects[key].value));
      }
    });
    var hash = parts.length ? "#" + parts.join("&") : "#findings";
    try {
      history.replaceState(null, "", hash);
    } catch (e) {
      /* some browsers refuse replaceState on file:// pages; the filter still applies */
    }
  }

  function readHash() {
    var text = window.location.hash.replace(/^#/, "");
    var found = false;
    var values = {};
    text.split("&").forEach(function (pair) {
      var at = pair.indexOf("=");
      if (at > 0) {
        values[pair.slice(0, at)] = decodeURIComponent(pair.slice(at + 1));
      }
    });
    KEYS.forEach(function (key) {
      if (Object.prototype.hasOwnProperty.call(values, key) && hasOption(selects[key], values[key])) {
        selects[key].value = values[key];
        found = true;
      } else if (text.indexOf("=") >= 0) {
        selects[key].value = "";
      }
    });
    return found;
  }

  function setFilter(key, value) {
    selects[key].value = hasOption(selects[key], value) ? value : "";
    applyFilters();
    writeHash();
  }

  if (selects.category && selects.severity && selects.file) {
    KEYS.forEach(function (key) {
      selects[key].addEventListener("change", function () { applyFilters(); writeHash(); });
    });
    document.getElementById("filter-reset").addEventListener("click", function () {
      KEYS.forEach(function (key) { selects[key].value = ""; });
      applyFilters();
      writeHash();
    });
    Array.prototype.forEach.call(document.querySelectorAll(".bar-row"), function (bar) {
      bar.addEventListener("click", function () {
        KEYS.forEach(function (key) { selects[key].value = ""; });
        setFilter(bar.getAttribute("data-filter"), bar.getAttribute("data-value"));
        document.getElementById("findings").scrollIntoView();
      });
    });
    Array.prototype.forEach.call(document.querySelectorAll(".file-link"), function (link) {
      link.addEventListener("click", function () {
        KEYS.forEach(function (key) { selects[key].value = ""; });
        setFilter("file", link.getAttribute("data-value"));
        document.getElementById("findings").scrollIntoView();
      });
    });
    window.addEventListener("hashchange", function () {
      if (readHash()) { applyFilters(); }
    });
    var filtered = readHash();
    applyFilters();
    if (filtered) { document.getElementById("findings").scrollIntoView(); }
  }

  // Printing shows every collapsed section; the page folds them again afterwards.
  var reopened = [];
  window.addEventListener("beforeprint", function () {
    reopened = Array.prototype.filter.call(document.querySelectorAll("details"),
      function (d) { return !d.open; });
    reopened.forEach(function (d) { d.open = true; });
  });
  window.addEventListener("afterprint", function () {
    reopened.forEach(function (d) { d.open = false; });
    reopened = [];
  });

  // Sortable tables: a click on a heading sorts by that column, again to reverse.
  Array.prototype.forEach.call(document.querySelectorAll("table.sortable"), function (table) {
    var heads = Array.prototype.slice.call(table.querySelectorAll("th[data-sort]"));
    heads.forEach(function (th, column) {
      th.addEventListener("click", function () {
        var numeric = th.getAttribute("data-sort") === "num";
        var descending = th.getAttribute("aria-sort") !== "descending";
        if (!numeric && !th.hasAttribute("aria-sort")) { descending = false; }
        heads.forEach(function (h) { h.removeAttribute("aria-sort"); });
        th.setAttribute("aria-sort", descending ? "descending" : "ascending");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[column].textContent.trim();
          var y = b.cells[column].textContent.trim();
          var order = numeric ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
          return descending ? -order : order;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });

  var statusSelect = document.getElementById("filter-status");
  var apiSearch = document.getElementById("filter-api");
  var apiRows = Array.prototype.slice.call(document.querySelectorAll("tr.api"));

  function applyApiFilters() {
    var status = statusSelect ? statusSelect.value : "";
    var needle = apiSearch ? apiSearch.value.trim().toLowerCase() : "";
    apiRows.forEach(function (row) {
      row.hidden = (status && row.getAttribute("data-status") !== status) ||
        (needle && row.getAttribute("data-symbol").indexOf(needle) < 0);
    });
  }

  if (statusSelect) { statusSelect.addEventListener("change", applyApiFilters); }
  if (apiSearch) { apiSearch.addEventListener("input", applyApiFilters); }
  Array.prototype.forEach.call(document.querySelectorAll("[data-api-status]"), function (btn) {
    btn.addEventListener("click", function () {
      if (statusSelect) { statusSelect.value = btn.getAttribute("data-api-status"); }
      applyApiFilters();
      document.getElementById("apis").scrollIntoView();
    });
  });
})();
