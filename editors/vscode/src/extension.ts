// The torchlint extension: starts `torchlint server` from the workspace's Python
// environment and connects VS Code to it (Python files and Jupyter notebooks).

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
  "severity",
  "documentationUrl",
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

// torchlint.path, else torchlint.interpreter, else the selected Python environment,
// else `torchlint` on PATH.
async function serverCommand(): Promise<{ command: string; args: string[] }> {
  const scope = vscode.workspace.workspaceFolders?.[0];
  const config = vscode.workspace.getConfiguration(SECTION, scope);
  const path = config.get<string[]>("path", []);
  if (path.length > 0) {
    return { command: path[0], args: [...path.slice(1), "server"] };
  }
  const interpreter = config.get<string[]>("interpreter", []);
  if (interpreter.length > 0) {
    return {
      command: interpreter[0],
      args: [...interpreter.slice(1), "-m", "torchlint", "server"],
    };
  }
  try {
    const python = await PythonExtension.api();
    const selected = python.environments.getActiveEnvironmentPath(scope?.uri);
    const environment = await python.environments.resolveEnvironment(selected);
    const executable = environment?.executable.uri?.fsPath;
    if (executable) {
      return { command: executable, args: ["-m", "torchlint", "server"] };
    }
  } catch (error) {
    output?.appendLine(`No Python environment from the Python extension: ${error}`);
  }
  return { command: "torchlint", args: ["server"] };
}

async function start(context: vscode.ExtensionContext): Promise<void> {
  const { command, args } = await serverCommand();
  output?.appendLine(`Starting ${command} ${args.join(" ")}`);
  const serverOptions: ServerOptions = {
    run: { command, args, transport: TransportKind.stdio },
    debug: { command, args, transport: TransportKind.stdio },
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
        event.affectsConfiguration("torchlint.interpreter")
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
