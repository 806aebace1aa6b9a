// Runs the extension's serverCommand with a stand-in for the vscode module: node
// server_command.js BUNDLE CONFIG_JSON [EXTENSION_FOLDER] prints {"found": ...,
// "shown": [...]}.
const Module = require("module");
const path = require("path");
const resolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return request === "vscode" ? path.join(__dirname, "fake_vscode.js") : resolve.call(this, request, ...rest);
};
const vscode = require("vscode");
const extension = require(process.argv[2]);
vscode.__state.config = JSON.parse(process.argv[3]);
const folder = process.argv[4] ?? path.join(__dirname, "no-such-extension");
extension.serverCommand({ asAbsolutePath: (p) => path.join(folder, p) }).then((found) => {
  console.log(JSON.stringify({ found: found ?? null, shown: vscode.__state.shown }));
});
