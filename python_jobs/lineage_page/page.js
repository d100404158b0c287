/* Draws the lineage graph embedded in #lineage-data with dagre's layout, as SVG.
   Every name is put into the page with textContent or an attribute, never as markup. */
(function () {
  "use strict";

  var SVG_NS = "http://www.w3.org/2000/svg";
  var LABEL_CHARS = 30;
  var SUBLABEL_CHARS = 36;
  var SIZE = { DATASET: { width: 210, height: 46 }, JOB: { width: 210, height: 40 } };

  var payload = JSON.parse(document.getElementById("lineage-data").textContent);
  var nodes = Array.isArray(payload.nodes) ? payload.nodes : [];
  var details = payload.details || {};
  var byId = new Map();
  var elementById = new Map();
  var edges = [];
  var selectedId = null;
  var view = { x: 0, y: 0, scale: 1 };

  var canvas = document.getElementById("canvas");
  var viewport = document.getElementById("viewport");
  var panel = document.getElementById("panel");
  var panelBody = document.getElementById("panel-body");

  function svg(tag, attributes, parent) {
    var element = document.createElementNS(SVG_NS, tag);
    Object.keys(attributes || {}).forEach(function (key) { element.setAttribute(key, attributes[key]); });
    if (parent) parent.appendChild(element);
    return element;
  }

  function html(tag, className, text, parent) {
    var element = document.createElement(tag);
    if (className) element.className = className;
    if (text !== undefined && text !== null) element.textContent = String(text);
    if (parent) parent.appendChild(element);
    return element;
  }

  var shorten = LineageLabels.shorten;
  var drawnLabels = [];

  /* Shortens until the drawn text fits its node (wide letters and other scripts vary a lot). */
  function fitText(element, text, limit, room) {
    element.textContent = shorten(text, limit);
    while (limit > 6 && element.getComputedTextLength() > room) {
      limit -= 2;
      element.textContent = shorten(text, limit);
    }
  }

  function kindOf(node) { return node.type === "JOB" ? "JOB" : "DATASET"; }

  /* Marquez node ids are "dataset:<namespace>:<name>"; namespaces may hold colons, so prefer data. */
  function nameOf(node) {
    var data = node.data || {};
    if (data.name) return String(data.name);
    if (data.id && data.id.name) return String(data.id.name);
    var id = String(node.id);
    return id.slice(id.lastIndexOf(":") + 1);
  }

  function namespaceOf(node) {
    var data = node.data || {};
    if (data.namespace) return String(data.namespace);
    if (data.id && data.id.namespace) return String(data.id.namespace);
    return "";
  }

  function collectEdges() {
    var seen = new Set();
    nodes.forEach(function (node) {
      [].concat(node.inEdges || [], node.outEdges || []).forEach(function (edge) {
        if (!edge || !byId.has(edge.origin) || !byId.has(edge.destination)) return;
        if (edge.origin === edge.destination) return;
        var key = JSON.stringify([edge.origin, edge.destination]);
        if (seen.has(key)) return;
        seen.add(key);
        edges.push({ origin: edge.origin, destination: edge.destination });
      });
    });
  }

  function layout() {
    var graph = new dagre.graphlib.Graph();
    graph.setGraph({ rankdir: "LR", nodesep: 16, ranksep: 46, edgesep: 12, marginx: 30, marginy: 30 });
    graph.setDefaultEdgeLabel(function () { return {}; });
    nodes.forEach(function (node) {
      var size = SIZE[kindOf(node)];
      graph.setNode(node.id, { width: size.width, height: size.height });
    });
    edges.forEach(function (edge) { graph.setEdge(edge.origin, edge.destination); });
    dagre.layout(graph);
    return graph;
  }

  /* Through every routed point, with horizontal tangents: smooth in a left-to-right layout. */
  function edgePath(points) {
    var d = "M" + points[0].x + "," + points[0].y;
    for (var i = 1; i < points.length; i += 1) {
      var from = points[i - 1];
      var to = points[i];
      var middle = (from.x + to.x) / 2;
      d += " C" + middle + "," + from.y + " " + middle + "," + to.y + " " + to.x + "," + to.y;
    }
    return d;
  }

  function drawDatasetShape(group, size) {
    svg("rect", { class: "shape", x: -size.width / 2, y: -size.height / 2, width: size.width, height: size.height, rx: 6 }, group);
    var left = -size.width / 2 + 14;
    svg("ellipse", { class: "icon-dataset", cx: left + 7, cy: -6, rx: 7, ry: 3 }, group);
    svg("path", { class: "icon-dataset", d: "M" + left + ",-6 v11 a7,3 0 0 0 14,0 v-11 M" + left + ",-0.5 a7,3 0 0 0 14,0" }, group);
  }

  function drawJobShape(group, size) {
    svg("rect", { class: "shape", x: -size.width / 2, y: -size.height / 2, width: size.width, height: size.height, rx: size.height / 2 }, group);
    var left = -size.width / 2 + 16;
    svg("circle", { class: "icon-job", cx: left + 7, cy: 0, r: 8 }, group);
    svg("path", { d: "M" + (left + 4.5) + ",-4 L" + (left + 11) + ",0 L" + (left + 4.5) + ",4 z", fill: "#fff" }, group);
  }

  function drawNode(node, position, layer) {
    var kind = kindOf(node);
    var size = SIZE[kind];
    var name = nameOf(node);
    var namespace = namespaceOf(node);
    var group = svg("g", {
      class: "node " + kind.toLowerCase(),
      transform: "translate(" + position.x + "," + position.y + ")",
      "data-node-id": node.id,
      "data-name": name,
      tabindex: "0",
      role: "button"
    }, layer);
    svg("title", {}, group).textContent = (kind === "JOB" ? "job " : "dataset ") + namespace + " : " + name;
    if (kind === "JOB") drawJobShape(group, size); else drawDatasetShape(group, size);
    var textX = -size.width / 2 + 38;
    var label = svg("text", { class: "label", x: textX, y: namespace ? -2 : 4 }, group);
    var room = size.width / 2 - textX - 10;
    fitText(label, name, LABEL_CHARS, room);
    var sublabel = namespace ? svg("text", { class: "sublabel", x: textX, y: 13 }, group) : null;
    if (sublabel) fitText(sublabel, namespace, SUBLABEL_CHARS, room);
    drawnLabels.push({ name: name, element: label, sublabel: sublabel ? sublabel.textContent : "" });
    group.addEventListener("click", function (event) { event.stopPropagation(); select(node.id); });
    group.addEventListener("keydown", function (event) { if (event.key === "Enter") select(node.id); });
    elementById.set(node.id, group);
  }

  function draw(graph) {
    var edgeLayer = document.getElementById("edges");
    var nodeLayer = document.getElementById("nodes");
    edges.forEach(function (edge) {
      var routed = graph.edge(edge.origin, edge.destination);
      edge.element = svg("path", {
        class: "edge",
        d: edgePath(routed.points),
        "marker-end": "url(#arrow)",
        "data-origin": edge.origin,
        "data-destination": edge.destination
      }, edgeLayer);
    });
    nodes.forEach(function (node) { drawNode(node, graph.node(node.id), nodeLayer); });
    var labels = LineageLabels.distinct(drawnLabels.map(function (entry) {
      return { name: entry.name, label: entry.element.textContent, sublabel: entry.sublabel };
    }), LABEL_CHARS);
    drawnLabels.forEach(function (entry, index) { entry.element.textContent = labels[index]; });
    var bounds = graph.graph();
    return { width: bounds.width || 0, height: bounds.height || 0 };
  }

  function applyView() {
    viewport.setAttribute("transform", "translate(" + view.x + "," + view.y + ") scale(" + view.scale + ")");
  }

  function fit(bounds) {
    var box = canvas.getBoundingClientRect();
    var width = box.width - (panel.hidden ? 0 : panel.offsetWidth);
    if (!bounds.width || !bounds.height || !width) return;
    view.scale = Math.max(0.05, Math.min(1.1, width / bounds.width, box.height / bounds.height));
    view.x = (width - bounds.width * view.scale) / 2;
    view.y = Math.max(0, (box.height - bounds.height * view.scale) / 2);
    applyView();
  }

  function centerOn(id) {
    var element = elementById.get(id);
    if (!element) return;
    var box = canvas.getBoundingClientRect();
    var width = box.width - (panel.hidden ? 0 : panel.offsetWidth);
    var match = /translate\(([-\d.e]+),([-\d.e]+)\)/.exec(element.getAttribute("transform"));
    view.x = width / 2 - Number(match[1]) * view.scale;
    view.y = box.height / 2 - Number(match[2]) * view.scale;
    applyView();
  }

  function hiddenByPanel(id) {
    var element = elementById.get(id);
    if (!element || panel.hidden) return false;
    return element.getBoundingClientRect().right > panel.getBoundingClientRect().left;
  }

  function enablePanZoom() {
    var drag = null;
    canvas.addEventListener("mousedown", function (event) {
      drag = { x: event.clientX - view.x, y: event.clientY - view.y, moved: false };
      canvas.classList.add("panning");
    });
    window.addEventListener("mousemove", function (event) {
      if (!drag) return;
      view.x = event.clientX - drag.x;
      view.y = event.clientY - drag.y;
      drag.moved = true;
      applyView();
    });
    window.addEventListener("mouseup", function () { drag = null; canvas.classList.remove("panning"); });
    canvas.addEventListener("wheel", function (event) {
      event.preventDefault();
      var box = canvas.getBoundingClientRect();
      var px = event.clientX - box.left;
      var py = event.clientY - box.top;
      var scale = Math.max(0.1, Math.min(3, view.scale * Math.exp(-event.deltaY * 0.0015)));
      view.x = px - (px - view.x) * (scale / view.scale);
      view.y = py - (py - view.y) * (scale / view.scale);
      view.scale = scale;
      applyView();
    }, { passive: false });
    canvas.addEventListener("click", function (event) {
      if (event.target === canvas) select(null);
    });
  }

  function highlight(id) {
    canvas.classList.toggle("dimmed", Boolean(id));
    elementById.forEach(function (element, key) {
      element.classList.toggle("selected", key === id);
      element.classList.remove("near");
    });
    if (id && elementById.has(id)) elementById.get(id).classList.add("near");
    edges.forEach(function (edge) {
      var active = Boolean(id) && (edge.origin === id || edge.destination === id);
      edge.element.classList.toggle("active", active);
      edge.element.setAttribute("marker-end", active ? "url(#arrow-active)" : "url(#arrow)");
      if (active) {
        elementById.get(edge.origin).classList.add("near");
        elementById.get(edge.destination).classList.add("near");
      }
    });
  }

  /* ---- side panel ---- */

  function formatTime(value) {
    if (!value) return "\u2013";
    return String(value).replace("T", " ").replace(/\.\d+/, "");
  }

  function formatDuration(ms) {
    if (ms === null || ms === undefined || ms === "") return "\u2013";
    var seconds = Number(ms) / 1000;
    if (!isFinite(seconds)) return "\u2013";
    if (seconds < 60) return seconds.toFixed(seconds < 10 ? 1 : 0) + " s";
    if (seconds < 3600) return Math.floor(seconds / 60) + " min " + Math.round(seconds % 60) + " s";
    return Math.floor(seconds / 3600) + " h " + Math.round((seconds % 3600) / 60) + " min";
  }

  function table(parent, headers, rows, rowClass) {
    var element = html("table", rowClass || "", null, parent);
    var head = html("tr", "", null, html("thead", "", null, element));
    headers.forEach(function (header) { html("th", "", header.label, head).style.width = header.width || ""; });
    var body = html("tbody", "", null, element);
    rows.forEach(function (cells) {
      var row = html("tr", "", null, body);
      cells.forEach(function (cell) {
        var td = html("td", cell.className || "", null, row);
        if (cell.node) td.appendChild(cell.node); else td.textContent = cell.text === undefined || cell.text === null ? "" : String(cell.text);
        if (cell.title) td.title = cell.title;
      });
    });
    return element;
  }

  function fieldsTable(parent, fields) {
    var rows = fields.map(function (field) {
      return [
        { text: field.name, className: "field-name" },
        { text: field.type || "", className: "field-type" },
        { text: field.description || "" }
      ];
    });
    var element = table(parent, [{ label: "field", width: "38%" }, { label: "type", width: "22%" }, { label: "description" }], rows, "fields");
    Array.prototype.forEach.call(element.querySelectorAll("tbody tr"), function (row, index) {
      row.setAttribute("data-field", String(fields[index].name));
    });
    return element;
  }

  function definitionList(parent, pairs) {
    var list = html("dl", "", null, parent);
    pairs.forEach(function (pair) {
      if (pair[1] === undefined || pair[1] === null || pair[1] === "") return;
      html("dt", "", pair[0], list);
      html("dd", "", pair[1], list);
    });
  }

  function datasetPanel(node, info) {
    var data = node.data || {};
    var fields = Array.isArray(info.fields) ? info.fields : (Array.isArray(data.fields) ? data.fields : []);
    definitionList(panelBody, [
      ["type", data.type],
      ["source", data.sourceName],
      ["updated", data.updatedAt ? formatTime(data.updatedAt) : ""],
      ["description", data.description]
    ]);
    var schema = html("section", "schema", null, panelBody);
    html("h2", "", "Current schema (" + fields.length + " field" + (fields.length === 1 ? "" : "s") + ")", schema);
    if (fields.length) fieldsTable(schema, fields); else html("p", "note", "No schema recorded for this dataset.", schema);

    var versions = Array.isArray(info.schemaVersions) ? info.schemaVersions : [];
    var versionSection = html("section", "schema-versions", null, panelBody);
    html("h2", "", "Schema versions (" + versions.length + ")", versionSection);
    if (!versions.length) html("p", "note", "No schema versions.", versionSection);
    versions.forEach(function (version, index) {
      var versionFields = Array.isArray(version.fields) ? version.fields : [];
      var box = html("details", "schema-version", null, versionSection);
      if (index === 0) box.open = versions.length === 1;
      var summary = html("summary", "", formatTime(version.createdAt), box);
      html("span", "note", versionFields.length + " fields \u00b7 " + String(version.id || "").slice(0, 8), summary);
      summary.title = String(version.id || "");
      if (versionFields.length) fieldsTable(box, versionFields); else html("p", "note", "No fields.", box);
    });

    var facets = info.facets && typeof info.facets === "object" ? info.facets : (data.facets || {});
    var names = Object.keys(facets).sort();
    var facetSection = html("section", "facets", null, panelBody);
    html("h2", "", "Facets (" + names.length + ")", facetSection);
    if (!names.length) html("p", "note", "No facets.", facetSection);
    names.forEach(function (name) {
      var box = html("details", "facet", null, facetSection);
      html("summary", "", name, box).title = name;
      html("pre", "", JSON.stringify(facets[name], null, 2), box);
    });
  }

  function jobPanel(node, info) {
    var data = node.data || {};
    definitionList(panelBody, [
      ["type", data.type],
      ["inputs", Array.isArray(data.inputs) ? String(data.inputs.length) : ""],
      ["outputs", Array.isArray(data.outputs) ? String(data.outputs.length) : ""],
      ["updated", data.updatedAt ? formatTime(data.updatedAt) : ""],
      ["description", data.description]
    ]);
    var runs = Array.isArray(info.latestRuns) ? info.latestRuns : [];
    var section = html("section", "runs", null, panelBody);
    html("h2", "", "Latest runs (" + runs.length + ")", section);
    if (!runs.length) { html("p", "note", "No runs recorded.", section); return; }
    var rows = runs.map(function (run) {
      var badge = html("span", "state " + String(run.state || "").replace(/[^A-Z_]/g, ""), run.state || "?");
      return [
        { node: badge },
        { text: formatTime(run.startedAt) },
        { text: formatDuration(run.durationMs) },
        { text: String(run.id || "").slice(0, 8), title: String(run.id || ""), className: "field-name" }
      ];
    });
    var element = table(section, [{ label: "state", width: "26%" }, { label: "started" }, { label: "duration", width: "20%" }, { label: "run", width: "18%" }], rows, "runs");
    Array.prototype.forEach.call(element.querySelectorAll("tbody tr"), function (row, index) {
      row.setAttribute("data-run-state", String(runs[index].state || ""));
    });
  }

  function showPanel(node) {
    panelBody.textContent = "";
    var kind = kindOf(node);
    panel.setAttribute("data-node-id", node.id);
    html("div", "panel-kind " + kind.toLowerCase(), kind === "JOB" ? "Job" : "Dataset", panelBody);
    html("div", "panel-name", nameOf(node), panelBody);
    html("div", "panel-namespace", namespaceOf(node), panelBody);
    var info = details[node.id] || {};
    if (kind === "JOB") jobPanel(node, info); else datasetPanel(node, info);
    panel.hidden = false;
  }

  /* Some browsers refuse history changes on file:// pages; the link is a convenience only. */
  function rememberInUrl(url) {
    try { history.replaceState(null, "", url); } catch (ignored) { /* keep the current URL */ }
  }

  function select(id) {
    selectedId = id && byId.has(id) ? id : null;
    highlight(selectedId);
    if (selectedId) {
      var wasHidden = panel.hidden;
      showPanel(byId.get(selectedId));
      if (wasHidden && hiddenByPanel(selectedId)) centerOn(selectedId);
      rememberInUrl("#node=" + encodeURIComponent(selectedId));
    } else {
      panel.hidden = true;
      panel.removeAttribute("data-node-id");
      rememberInUrl(location.pathname + location.search);
    }
  }

  function enableSearch() {
    var input = document.getElementById("search");
    function matches() {
      var text = input.value.trim().toLowerCase();
      var found = [];
      elementById.forEach(function (element, id) {
        var hit = Boolean(text) && (nameOf(byId.get(id)).toLowerCase().indexOf(text) >= 0);
        element.classList.toggle("match", hit);
        if (hit) found.push(id);
      });
      return found;
    }
    input.addEventListener("input", matches);
    input.addEventListener("keydown", function (event) {
      if (event.key !== "Enter") return;
      var found = matches();
      if (found.length) { select(found[0]); centerOn(found[0]); }
    });
  }

  // The page is served with the graph as of ``asOf`` (a query parameter): the control reloads it
  // with another moment, keeping the other parameters (nodeId, depth); empty means now.
  function enableAsOf() {
    var form = document.getElementById("as-of-form");
    var input = document.getElementById("as-of");
    input.value = payload.asOf || "";
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var params = new URLSearchParams(location.search);
      var moment = input.value.trim();
      if (moment) params.set("asOf", moment); else params.delete("asOf");
      var query = params.toString();
      location.assign(location.pathname + (query ? "?" + query : ""));
    });
  }

  function start() {
    enableAsOf();
    nodes.forEach(function (node) { if (node && node.id !== undefined) byId.set(node.id, node); });
    nodes = Array.from(byId.values());
    collectEdges();
    var jobs = nodes.filter(function (node) { return kindOf(node) === "JOB"; }).length;
    document.getElementById("counts").textContent =
      jobs + " jobs \u00b7 " + (nodes.length - jobs) + " datasets \u00b7 " + edges.length + " edges";
    if (!nodes.length) {
      document.getElementById("empty").hidden = false;
      document.body.setAttribute("data-ready", "true");
      return;
    }
    var bounds = draw(layout());
    enablePanZoom();
    enableSearch();
    document.getElementById("fit").addEventListener("click", function () { fit(bounds); });
    document.getElementById("panel-close").addEventListener("click", function () { select(null); });
    document.addEventListener("keydown", function (event) { if (event.key === "Escape") select(null); });
    var wanted = /^#node=(.*)$/.exec(location.hash);
    if (wanted) select(decodeURIComponent(wanted[1]));
    fit(bounds);
    document.body.setAttribute("data-ready", "true");
  }

  try {
    start();
  } catch (error) {
    document.body.setAttribute("data-error", String(error && error.message || error));
    throw error;
  }
})();
