// Grafana registers its option editors (select, radio, boolean, …) when the app starts; the
// builder looks them up by id while setPanelOptions runs. Outside Grafana (jest, the browser
// harness) they must be registered first, as Grafana's own panel tests do with
// `standardEditorsRegistry.setInit(getAllOptionEditors)` — which @grafana/ui does not export,
// so these are small editors over the same @grafana/ui inputs.
import React from 'react';
import { SelectableValue, StandardEditorProps, StandardEditorsRegistryItem, standardEditorsRegistry } from '@grafana/data';
import { Input, MultiSelect, RadioButtonGroup, Select, Switch } from '@grafana/ui';

type Options<T> = { options?: Array<SelectableValue<T>> };

function RadioEditor({ value, onChange, item }: StandardEditorProps<unknown, Options<unknown>>) {
  return <RadioButtonGroup value={value} options={item.settings?.options ?? []} onChange={(v) => onChange(v)} />;
}

function SelectEditor({ value, onChange, item }: StandardEditorProps<unknown, Options<unknown>>) {
  return <Select value={value} options={item.settings?.options ?? []} onChange={(v) => onChange(v.value)} />;
}

function MultiSelectEditor({ value, onChange, item }: StandardEditorProps<unknown[], Options<unknown>>) {
  return (
    <MultiSelect
      value={value}
      options={item.settings?.options ?? []}
      onChange={(vs) => onChange(vs.map((v) => v.value))}
    />
  );
}

function BooleanEditor({ value, onChange, id }: StandardEditorProps<boolean>) {
  return <Switch id={id} value={Boolean(value)} onChange={(e) => onChange(e.currentTarget.checked)} />;
}

function NumberEditor({ value, onChange, id }: StandardEditorProps<number>) {
  return (
    <Input
      id={id}
      type="number"
      defaultValue={value}
      onBlur={(e) => onChange(e.currentTarget.value === '' ? undefined : Number(e.currentTarget.value))}
    />
  );
}

function TextEditor({ value, onChange, id }: StandardEditorProps<string>) {
  return <Input id={id} defaultValue={value} onBlur={(e) => onChange(e.currentTarget.value)} />;
}

export const editors: StandardEditorsRegistryItem[] = [
  { id: 'radio', name: 'Radio', editor: RadioEditor },
  { id: 'select', name: 'Select', editor: SelectEditor },
  { id: 'multi-select', name: 'Multi select', editor: MultiSelectEditor },
  { id: 'boolean', name: 'Boolean', editor: BooleanEditor },
  { id: 'number', name: 'Number', editor: NumberEditor },
  { id: 'slider', name: 'Slider', editor: NumberEditor },
  { id: 'text', name: 'Text', editor: TextEditor },
  { id: 'strings', name: 'Strings', editor: TextEditor },
  { id: 'unit', name: 'Unit', editor: TextEditor },
  { id: 'color', name: 'Color', editor: TextEditor },
  { id: 'field-name', name: 'Field name', editor: TextEditor },
  { id: 'timezone', name: 'Time zone', editor: TextEditor },
];

/** Call once, before anything reads the registry (it refuses a second init). */
export function registerStandardEditors(): void {
  standardEditorsRegistry.setInit(() => editors);
}
