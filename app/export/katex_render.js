// Pre-renders math for the offline handbook: reads a JSON array of [tex, display] pairs on stdin,
// writes a JSON array of HTML strings (null where KaTeX failed) on stdout. Run by app/export/math.py.
"use strict";
const katex = require(process.argv[2]);
let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => { input += chunk; });
process.stdin.on("end", () => {
  const out = JSON.parse(input).map(([tex, display]) => {
    try {
      return katex.renderToString(tex, { displayMode: display, throwOnError: true, output: "htmlAndMathml" });
    } catch (e) {
      return null;
    }
  });
  process.stdout.write(JSON.stringify(out));
});
