// A stand-in for the vscode module, enough to load the extension and call serverCommand.
const state = { config: {}, shown: [], lines: [] };
const anyClass = class {};
const base = {
  __state: state,
  workspace: {
    workspaceFolders: undefined,
    getConfiguration: () => ({ get: (key, fallback) => (key in state.config ? state.config[key] : fallback) }),
  },
  window: {
    showErrorMessage: (message) => { state.shown.push(message); },
    createOutputChannel: () => ({ appendLine: (l) => state.lines.push(l) }),
  },
  extensions: { getExtension: () => undefined },
};
module.exports = new Proxy(base, { get: (target, name) => (name in target ? target[name] : anyClass) });
