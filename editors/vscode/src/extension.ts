// The torchlint extension: starts `torchlint server` from the workspace's Python
// environment and connects VS Code to it (Python files and Jupyter notebooks).

import { execFile } from "child_process";
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import { PythonExtension } from "@vscode/python-extension";
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";

const SECTION = "torchlint";
// the editor settings the server reads (see the README's "Editors" section)
const SERVER_SETTINGS = [
  "select",
  "extendSelect",
  "ignore",
  "preview",
  "unsafeFixes",
  "configuration",
  "configurationPreference",
  "lintOnChange",
  "lintDelay",
  "severity",
  "documentationUrl",
  "args",
];

let client: LanguageClient | undefined;
let output: vscode.OutputChannel | undefined;

function settingsFor(scope?: vscode.WorkspaceFolder): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  const found: Record<string, unknown> = {};
  for (const key of SERVER_SETTINGS) {
    const value = config.get(key);
    if (value !== undefined && value !== null) {
      found[key] = value;
    }
  }
  return found;
}

function initializationOptions(): Record<string, unknown> {
  const folders = vscode.workspace.workspaceFolders ?? [];
  return {
    globalSettings: settingsFor(undefined),
    settings: folders.map((folder) => ({
      ...settingsFor(folder),
      workspace: folder.uri.toString(),
    })),
  };
}

type Command = { command: string; args: string[]; env?: NodeJS.ProcessEnv };

// Runs `python -c code` where the server would run (the workspace folder); resolves to
// undefined when it succeeds, else to what went wrong.
function failure(
  python: string[],
  code: string,
  cwd?: string,
  env?: NodeJS.ProcessEnv,
): Promise<string | undefined> {
  return new Promise((resolve) => {
    const options = { timeout: 20000, env: env ?? process.env, cwd };
    execFile(python[0], [...python.slice(1), "-c", code], options, (error, _out, stderr) => {
      if (!error) {
        resolve(undefined);
        return;
      }
      const lines = `${stderr}`.trim().split(/\r?\n/);
      resolve(lines[lines.length - 1] || `${error.message}`);
    });
  });
}

// The interpreter the workspace uses: torchlint.interpreter, else the Python extension's.
async function workspacePython(scope?: vscode.WorkspaceFolder): Promise<string[] | undefined> {
  const interpreter = vscode.workspace
    .getConfiguration(SECTION, scope)
    .get<string[]>("interpreter", []);
  if (interpreter.length > 0) {
    return interpreter;
  }
  try {
    const python = await PythonExtension.api();
    const selected = python.environments.getActiveEnvironmentPath(scope?.uri);
    const environment = await python.environments.resolveEnvironment(selected);
    const executable = environment?.executable.uri?.fsPath;
    if (executable) {
      return [executable];
    }
  } catch (error) {
    output?.appendLine(`No Python environment from the Python extension: ${error}`);
  }
  return undefined;
}

function onPath(name: string): string | undefined {
  const suffixes = process.platform === "win32" ? [".exe", ".cmd", ""] : [""];
  for (const folder of (process.env.PATH ?? "").split(path.delimiter)) {
    for (const suffix of suffixes) {
      const candidate = path.join(folder, name + suffix);
      if (folder && fs.existsSync(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

// what the server needs: torchlint and the lsp extra
const IMPORT_SERVER = "import torchlint.lsp.features";

// torchlint.path, else (importStrategy useBundled) the torchlint bundled with the
// extension, else the workspace's interpreter when it has torchlint, else `torchlint` on
// PATH. Undefined, with the reasons shown to the user, when none can run the server.
export async function serverCommand(context: vscode.ExtensionContext): Promise<Command | undefined> {
  const scope = vscode.workspace.workspaceFolders?.[0];
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  const executable = config.get<string[]>("path", []);
  if (executable.length > 0) {
    return { command: executable[0], args: [...executable.slice(1), "server"] };
  }
  const reasons: string[] = [];
  const cwd = scope?.uri.fsPath;
  const python = await workspacePython(scope);
  if (config.get<string>("importStrategy", "fromEnvironment") === "useBundled") {
    const libs = context.asAbsolutePath(path.join("bundled", "libs"));
    const interpreter = python ?? [onPath("python3") ?? onPath("python") ?? "python3"];
    const env = { ...process.env, PYTHONPATH: [libs, process.env.PYTHONPATH].filter(Boolean).join(path.delimiter) };
    const problem = fs.existsSync(path.join(libs, "torchlint"))
      ? await failure(interpreter, IMPORT_SERVER, cwd, env)
      : "this build of the extension bundles no torchlint (see `npm run bundle`)";
    if (!problem) {
      return { command: interpreter[0], args: [...interpreter.slice(1), "-m", "torchlint", "server"], env };
    }
    reasons.push(`the bundled torchlint: ${problem}`);
  }
  if (python) {
    const problem = await failure(python, IMPORT_SERVER, cwd);
    if (!problem) {
      return { command: python[0], args: [...python.slice(1), "-m", "torchlint", "server"] };
    }
    reasons.push(`${python.join(" ")}: ${problem}`);
  }
  const installed = onPath("torchlint");
  if (installed) {
    if (reasons.length > 0) {
      output?.appendLine(`Using ${installed} from PATH (${reasons.join("; ")})`);
    }
    return { command: installed, args: ["server"] };
  }
  reasons.push("no torchlint on PATH");
  vscode.window.showErrorMessage(
    `torchlint: no torchlint to run (${reasons.join("; ")}). Install it with the lsp extra ` +
      "in the selected environment (pip install '/path/to/torchlint[lsp]'), or set torchlint.path.",
  );
  return undefined;
}

async function start(context: vscode.ExtensionContext): Promise<void> {
  const found = await serverCommand(context);
  if (!found) {
    return;
  }
  const { command, args, env } = found;
  output?.appendLine(`Starting ${command} ${args.join(" ")}`);
  const options = env ? { env } : undefined;
  const serverOptions: ServerOptions = {
    run: { command, args, transport: TransportKind.stdio, options },
    debug: { command, args, transport: TransportKind.stdio, options },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
      { notebook: "*", language: "python" },
    ],
    initializationOptions: initializationOptions(),
    synchronize: { configurationSection: SECTION },
    outputChannel: output,
  };
  client = new LanguageClient(SECTION, "torchlint", serverOptions, clientOptions);
  await client.start();
}

async function stop(): Promise<void> {
  if (client) {
    const running = client;
    client = undefined;
    await running.stop();
  }
}

async function restart(context: vscode.ExtensionContext): Promise<void> {
  await stop();
  try {
    await start(context);
  } catch (error) {
    vscode.window.showErrorMessage(
      `torchlint: the server did not start (${error}). Install torchlint with the lsp ` +
        "extra in the selected environment, or set torchlint.path.",
    );
  }
}

async function fixAll(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!client || !editor) {
    return;
  }
  await client.sendRequest(ExecuteCommandRequest.type, {
    command: "torchlint.applyFixAll",
    arguments: [editor.document.uri.toString()],
  });
}

async function showRule(code?: string): Promise<void> {
  if (!client) {
    return;
  }
  const wanted =
    code ??
    (await vscode.window.showInputBox({
      prompt: "Rule code or name",
      placeHolder: "TL301",
    }));
  if (!wanted) {
    return;
  }
  const markdown = await client.sendRequest(ExecuteCommandRequest.type, {
    command: "torchlint.ruleDocumentation",
    arguments: [wanted.trim()],
  });
  if (typeof markdown !== "string") {
    vscode.window.showWarningMessage(`torchlint: no rule ${wanted}`);
    return;
  }
  const document = await vscode.workspace.openTextDocument({
    language: "markdown",
    content: markdown,
  });
  await vscode.commands.executeCommand("markdown.showPreview", document.uri);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("torchlint");
  context.subscriptions.push(
    output,
    vscode.commands.registerCommand("torchlint.restart", () => restart(context)),
    vscode.commands.registerCommand("torchlint.fixAll", fixAll),
    vscode.commands.registerCommand("torchlint.showRule", showRule),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (
        event.affectsConfiguration("torchlint.path") ||
        event.affectsConfiguration("torchlint.interpreter") ||
        event.affectsConfiguration("torchlint.importStrategy")
      ) {
        void restart(context);
      }
    }),
  );
  try {
    const python = await PythonExtension.api();
    context.subscriptions.push(
      python.environments.onDidChangeActiveEnvironmentPath(() => restart(context)),
    );
  } catch {
    // without the Python extension: torchlint.path or PATH decide
  }
  await restart(context);
}

export async function deactivate(): Promise<void> {
  await stop();
}
