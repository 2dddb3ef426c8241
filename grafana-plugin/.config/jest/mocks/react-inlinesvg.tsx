// @grafana/ui's Icon fetches `public/img/icons/…svg` through react-inlinesvg; jsdom has no server
// for that, so icons render as an empty <svg> named after the icon.
import React from 'react';

const SVG_FILE_NAME = /(.+)\/(.+)\.svg$/;

export default function InlineSVG({ src }: { src: string }) {
  return <svg xmlns="http://www.w3.org/2000/svg" data-testid={src.replace(SVG_FILE_NAME, '$2')} viewBox="0 0 24 24" />;
}
