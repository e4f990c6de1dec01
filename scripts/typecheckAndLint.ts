/**
 * `tsc -p tsconfig.json --noEmit` and `eslint .` on one TypeScript program (npm run checks).
 *
 *   tsx scripts/typecheckAndLint.ts
 *
 * Type-aware ESLint builds a program of its own over the files tsc has just checked: run side by
 * side, the two spent twice the CPU on parsing and binding the same files, beside the tests.
 * Here tsc's diagnostics come from the program, and ESLint's parser is handed that program
 * (parserOptions.programs), so each file is parsed and its types resolved once. Each check stays
 * whole: the same diagnostics as tsc, the same rules and files as `eslint .` (eslint.config.js);
 * `npm run typecheck` and `npm run lint` still run each alone. Exits 1 when either finds an error.
 */
import { ESLint } from 'eslint';
import ts from 'typescript';

const root = process.cwd();
const host: ts.ParseConfigFileHost = {
  ...ts.sys,
  onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
    throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
  },
};
const config = ts.getParsedCommandLineOfConfigFile('tsconfig.json', { noEmit: true }, host);
if (!config) throw new Error('tsconfig.json cannot be read');
const program = ts.createProgram({ rootNames: config.fileNames, options: config.options });
const diagnostics = [...config.errors, ...ts.getPreEmitDiagnostics(program)];
if (diagnostics.length > 0) {
  const formatHost: ts.FormatDiagnosticsHost = {
    getCanonicalFileName: (name) => name,
    getCurrentDirectory: () => root,
    getNewLine: () => '\n',
  };
  const format = process.stdout.isTTY ? ts.formatDiagnosticsWithColorAndContext : ts.formatDiagnostics;
  process.stdout.write(format(diagnostics, formatHost));
}

// The files of the program get it; the rest (bin/, assets/) are linted without types, as
// eslint.config.js says. `projectService: false`: the program replaces it.
const typedFiles = config.fileNames.map((file) => file.slice(root.length + 1));
const eslint = new ESLint({
  cwd: root,
  overrideConfig: [
    { files: typedFiles, languageOptions: { parserOptions: { projectService: false, programs: [program] } } },
  ],
});
const results = await eslint.lintFiles(['.']);
const formatter = await eslint.loadFormatter('stylish');
process.stdout.write(await formatter.format(results));

const lintErrors = results.reduce((sum, result) => sum + result.errorCount + result.fatalErrorCount, 0);
const typeErrors = diagnostics.filter((d) => d.category === ts.DiagnosticCategory.Error).length;
process.exitCode = typeErrors > 0 || lintErrors > 0 ? 1 : 0;
