/** esbuild bundles imported CSS into the app's stylesheet. */
declare module '*.css';
