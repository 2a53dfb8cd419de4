/** Sign in with an API key (a viewer key looks, an admin key acts). */
import { useState } from 'preact/hooks';

export function LoginView(props: { message?: string; submit: (key: string) => Promise<void> }) {
  const [key, setKey] = useState('');
  const [busy, setBusy] = useState(false);
  return (
    <main class="login" id="main">
      <form
        onSubmit={async (event) => {
          event.preventDefault();
          setBusy(true);
          try {
            await props.submit(key.trim());
          } finally {
            setBusy(false);
          }
        }}
      >
        <h1>OJS dashboard</h1>
        <p class="muted">
          Sign in with an API key of the server: a <strong>viewer</strong> key to look, an{' '}
          <strong>admin</strong> key to act. The key stays in this tab only.
        </p>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          type="password"
          autoComplete="current-password"
          required
          minLength={16}
          value={key}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
        />
        {props.message ? (
          <p class="error" role="alert">
            {props.message}
          </p>
        ) : null}
        <button type="submit" class="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
