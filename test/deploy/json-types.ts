// Checks plain JSON values against published TypeScript types, with the
// TypeScript compiler itself: the value is written as an object literal
// annotated with the type, so every missing required field, wrong type and
// unknown (misspelt) field is a compile error. @grafana/schema publishes the
// dashboard schema only as generated TypeScript types, and kubernetes-models'
// runtime validators accept unknown fields, so this is the strict half of both.
import ts from 'typescript';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface TypedValue {
  /** Names the value in error messages, e.g. a file and a document index. */
  label: string;
  /** A type expression valid after `imports`, e.g. `Dashboard`. */
  type: string;
  value: unknown;
}

// String enums (FieldColorModeId, ThresholdsMode, ...) are not assignable from
// the string literals JSON holds; `${E}` is the union of their values, which is
// exactly what a JSON document may contain.
const JSON_OF = `type JsonOf<T> =
  T extends string ? \`\${T}\`
  : T extends number | boolean | null | undefined ? T
  : T extends readonly (infer U)[] ? JsonOf<U>[]
  : T extends object ? { [K in keyof T]: JsonOf<T[K]> }
  : T;`;

const here = dirname(fileURLToPath(import.meta.url));

/** Returns one message per type error, each prefixed with the value's label; empty when all values conform. */
export function typeErrors(imports: string, values: TypedValue[]): string[] {
  const file = join(here, '__json_type_check__.ts');
  let text = `${imports}\n${JSON_OF}\n`;
  const spans: { label: string; start: number; end: number }[] = [];
  values.forEach((v, i) => {
    const start = text.length;
    text += `export const v${i}: JsonOf<${v.type}> = ${JSON.stringify(v.value, null, 1)};\n`;
    spans.push({ label: v.label, start, end: text.length });
  });

  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.fileExists = (f) => f === file || fileExists.call(host, f);
  host.readFile = (f) => (f === file ? text : readFile.call(host, f));
  host.getSourceFile = (f, lang, onError, create) =>
    f === file ? ts.createSourceFile(f, text, lang) : getSourceFile.call(host, f, lang, onError, create);

  const program = ts.createProgram([file], options, host);
  const source = program.getSourceFile(file);
  const diagnostics = [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)];
  return diagnostics.map((d) => {
    const at = d.start ?? 0;
    const owner = spans.find((s) => at >= s.start && at < s.end);
    const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
    const near = text.slice(at, at + 60).split('\n')[0];
    return `${owner?.label ?? 'imports'}: ${message} (at ${JSON.stringify(near)})`;
  });
}
