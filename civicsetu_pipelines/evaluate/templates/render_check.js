
(function () {
  "use strict";
  var problems = [];
  function flush() {
    var out = document.getElementById("render-errors");
    if (out) { out.textContent = problems.join("\n"); }
  }
  window.onerror = function (message, source, line) {
    problems.push("script error: " + message + " (" + source + ":" + line + ")");
    flush();
  };
  var consoleError = console.error;
  console.error = function () {
    problems.push("console.error: " + Array.prototype.join.call(arguments, " "));
    flush();
    return consoleError.apply(console, arguments);
  };
  window.addEventListener("load", function () {
    var images = document.images;
    for (var i = 0; i < images.length; i++) {
      var img = images[i];
      if (!(img.complete && img.naturalWidth > 0)) {
        problems.push("broken image: " + (img.alt || img.id || "image " + (i + 1)));
      }
    }
    flush();
    document.body.dataset.rendered = problems.length ? "failed" : "ok";
  });
})();
