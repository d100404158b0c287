/* Node labels of the lineage page: how a long name is shortened, and how no two nodes end up showing the
   same text. Pure functions (no DOM), inlined before page.js; tests call them in a browser. */
var LineageLabels = (function () {
  "use strict";

  var ELLIPSIS = "\u2026";
  var SEPARATORS = [".", "/", ":"];

  /* Where the last segment of a name starts: after its last ".", "/" or ":" (0 when it has none). */
  function lastSegmentStart(text) {
    var body = text.replace(/[.\/:]+$/, "");
    return Math.max.apply(null, SEPARATORS.map(function (s) { return body.lastIndexOf(s); })) + 1;
  }

  /* Middle cut: the start and the end of the text around an ellipsis. */
  function cutMiddle(text, limit) {
    var head = Math.ceil((limit - 1) * 0.45);
    return text.slice(0, head) + ELLIPSIS + text.slice(text.length - (limit - 1 - head));
  }

  /* At most ``limit`` characters. The last segment of the name stays whole, after as much of the start as
     fits ("DEMO_DB.publ…stg_customers"): both tell datasets apart. A last segment too long for that is cut
     in its middle. */
  function shorten(text, limit) {
    text = String(text);
    if (text.length <= limit) return text;
    var start = lastSegmentStart(text);
    var tail = start > 0 ? text.slice(start) : "";
    if (start > 0 && tail.length + 2 <= limit) return text.slice(0, limit - 1 - tail.length) + ELLIPSIS + tail;
    return cutMiddle(text, limit);
  }

  function sharedPrefix(a, b) {
    var n = 0;
    while (n < a.length && n < b.length && a.charAt(n) === b.charAt(n)) n += 1;
    return n;
  }

  function groups(entries, texts) {
    var byText = new Map();
    entries.forEach(function (entry, index) {
      var key = texts[index] + "\n" + (entry.sublabel || "");
      if (!byText.has(key)) byText.set(key, []);
      byText.get(key).push(index);
    });
    return Array.from(byText.values()).filter(function (group) { return group.length > 1; });
  }

  /* The name from shortly before where it starts to differ from the others in its group (at most
     ``CONTEXT`` characters before, not before that segment's start), its end kept when it fits. */
  var CONTEXT = 8;
  function differingPart(name, others, limit) {
    var shared = 0;
    others.forEach(function (other) { shared = Math.max(shared, sharedPrefix(name, other)); });
    if (shared === 0 || shared >= name.length) return null;
    var cut = Math.max.apply(null, SEPARATORS.map(function (s) { return name.lastIndexOf(s, shared - 1); })) + 1;
    var piece = name.slice(Math.max(cut, shared - CONTEXT));
    if (piece.length <= limit - 1) return ELLIPSIS + piece;
    var short = shorten(piece, limit - 1);
    if (short.slice(0, CONTEXT + 1) === piece.slice(0, CONTEXT + 1)) return ELLIPSIS + short;
    return ELLIPSIS + piece.slice(0, limit - 2) + ELLIPSIS;
  }

  /* ``entries``: [{name, label, sublabel}] where ``label`` is the shortened name as drawn. Returns the
     labels to draw, no two equal for nodes whose label and sublabel would otherwise both be equal: first
     the part of the name where it differs from the others, then, for what is still equal, a number. */
  function distinct(entries, limit) {
    var texts = entries.map(function (entry) { return String(entry.label); });
    groups(entries, texts).forEach(function (group) {
      var names = group.map(function (index) { return String(entries[index].name); });
      group.forEach(function (index, position) {
        var others = names.filter(function (_, other) { return other !== position; });
        var better = differingPart(names[position], others, limit);
        if (better !== null) texts[index] = better;
      });
    });
    for (var round = 0; round <= entries.length; round += 1) {
      var equal = groups(entries, texts);
      if (equal.length === 0) break;
      equal.forEach(function (group) {
        group.forEach(function (index, position) {
          if (position > 0) texts[index] = texts[index] + " (" + (position + 1) + ")";
        });
      });
    }
    return texts;
  }

  return { shorten: shorten, distinct: distinct, lastSegmentStart: lastSegmentStart };
})();
