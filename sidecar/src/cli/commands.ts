// The commands beside running the sidecar: `rpcscope diagnose`, `rpcscope top`
// and `rpcscope tap`, the first argument naming them. Each returns its exit status.
import { diagnose, type CommandIo } from './diagnose.ts';
import { tap } from './tap.ts';
import { top } from './top.ts';

export type Command = (argv: readonly string[], io: CommandIo) => Promise<number>;

export const COMMANDS: Readonly<Record<string, Command>> = { diagnose, top, tap };
