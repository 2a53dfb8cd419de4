/** Entry point: styles, then the app into #app. */
import './style.css';
import { render } from 'preact';
import { App } from './app.tsx';

render(<App />, document.getElementById('app')!);
