/**
 * The sessioncluster sidebar: the session clusters of the Jupyter server's $SESSIONCLUSTER_HOME,
 * their TaskManagers, jobs and Flink SQL tables, live; a job opens in the main area as the session's
 * dashboard page, served through the server extension's proxy (which adds the session's token
 * server-side).
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { MainAreaWidget, showErrorMessage } from '@jupyterlab/apputils';
import { URLExt } from '@jupyterlab/coreutils';
import { INotebookTracker, NotebookActions } from '@jupyterlab/notebook';
import { ServerConnection } from '@jupyterlab/services';
import { LabIcon } from '@jupyterlab/ui-components';
import { Message } from '@lumino/messaging';
import { Widget } from '@lumino/widgets';

const POLL_MS = 2000;
const TERMINAL = new Set(['FINISHED', 'CANCELED', 'FAILED']);

const ICON = new LabIcon({
  name: 'sessioncluster:icon',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><g class="jp-icon3" fill="#616161">' +
    '<circle cx="5" cy="6" r="3"/><circle cx="19" cy="6" r="3"/><circle cx="12" cy="18" r="3"/>' +
    '<path d="M7 7.5l4 8M17 7.5l-4 8M8 6h8" stroke="#616161" stroke-width="1.6" fill="none"/></g></svg>'
});

interface TaskManagerRow {
  id: string;
  slots: number;
  slotsUsed: number;
  heartbeatAgo: number;
  state: string;
}

interface JobRow {
  jid: string;
  name: string;
  state: string;
  finished: number;
  total: number;
  duration: number;
}

interface SessionRow {
  name: string;
  alive: boolean;
  error: string | null;
  taskmanagers: TaskManagerRow[];
  jobs: JobRow[];
}

/** An object of a session's Flink SQL catalog (the JobManager's `/sql/tables`). */
interface TableRow {
  name: string;
  kind: string;
}

function el(tag: string, attrs: Record<string, string> = {}, ...children: (Node | string)[]): HTMLElement {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    node.setAttribute(k, v);
  }
  node.append(...children);
  return node;
}

function button(label: string, cls: string, title: string, onClick: () => void): HTMLElement {
  const b = el('button', { class: cls, title }, label);
  b.addEventListener('click', event => {
    event.stopPropagation();
    onClick();
  });
  return b;
}

function duration(ms: number): string {
  if (ms < 0) {
    return '';
  }
  const s = ms / 1000;
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

/** The left sidebar: polls the server extension while it is visible. */
class SessionsPanel extends Widget {
  private timer = 0;
  private readonly settings = ServerConnection.makeSettings();

  constructor(
    private readonly app: JupyterFrontEnd,
    private readonly notebooks: INotebookTracker | null
  ) {
    super();
    this.id = 'sessioncluster-sessions';
    this.title.icon = ICON;
    this.title.caption = 'Flink session clusters';
    this.addClass('sc-sidebar');
    this.node.append(el('h2', {}, 'Session clusters'), el('div', { class: 'sc-body' }, 'Loading…'));
  }

  protected onAfterShow(msg: Message): void {
    void this.refresh();
    this.timer = window.setInterval(() => void this.refresh(), POLL_MS);
  }

  protected onBeforeHide(msg: Message): void {
    window.clearInterval(this.timer);
  }

  protected onBeforeDetach(msg: Message): void {
    window.clearInterval(this.timer);
  }

  private url(...parts: string[]): string {
    return URLExt.join(this.settings.baseUrl, 'sessioncluster', ...parts.map(encodeURIComponent));
  }

  async refresh(): Promise<void> {
    const body = this.node.querySelector('.sc-body') as HTMLElement;
    try {
      const resp = await ServerConnection.makeRequest(this.url('api', 'sessions'), {}, this.settings);
      if (!resp.ok) {
        throw new Error(`${resp.status} ${resp.statusText}`);
      }
      const data = (await resp.json()) as { home: string; sessions: SessionRow[] };
      const tables = await Promise.all(data.sessions.map(s => (s.alive ? this.tables(s.name) : null)));
      body.replaceChildren(...this.render(data.home, data.sessions, tables));
    } catch (err) {
      body.replaceChildren(el('div', { class: 'sc-muted' }, `Cannot list the sessions: ${err}`));
    }
  }

  /** The session's catalog, through the proxy; a string says why it could not be read. */
  private async tables(name: string): Promise<TableRow[] | string> {
    try {
      const resp = await ServerConnection.makeRequest(this.url('proxy', name, 'sql', 'tables'), {}, this.settings);
      if (!resp.ok) {
        return `${resp.status} ${resp.statusText}`;
      }
      return ((await resp.json()) as { tables: TableRow[] }).tables;
    } catch (err) {
      return String(err);
    }
  }

  private render(home: string, sessions: SessionRow[], tables: (TableRow[] | string | null)[]): HTMLElement[] {
    if (sessions.length === 0) {
      return [el('div', { class: 'sc-muted' }, `No session in ${home}. Start one with %flink_session start.`)];
    }
    return sessions.map((s, i) => {
      const box = this.renderSession(s);
      const catalog = tables[i];
      if (catalog !== null) {
        box.append(...this.renderTables(catalog));
      }
      return box;
    });
  }

  private renderTables(tables: TableRow[] | string): HTMLElement[] {
    if (typeof tables === 'string') {
      return [el('div', { class: 'sc-section' }, 'Tables'), el('div', { class: 'sc-muted' }, `Cannot list: ${tables}`)];
    }
    const out = [el('div', { class: 'sc-section' }, `Tables (${tables.length})`)];
    for (const t of tables) {
      out.push(
        el(
          'div',
          { class: 'sc-row sc-table', 'data-table': t.name, 'data-kind': t.kind },
          el('span', { class: 'sc-grow' }, t.name),
          el('span', { class: 'sc-muted sc-kind' }, t.kind.toLowerCase())
        )
      );
    }
    if (tables.length === 0) {
      out.push(el('div', { class: 'sc-muted' }, 'none: CREATE TABLE in %%flink_sql makes one'));
    }
    return out;
  }

  private renderSession(s: SessionRow): HTMLElement {
    const state = s.alive ? 'RUNNING' : 'GONE';
    const box = el(
      'div',
      { class: `sc-session${s.alive ? '' : ' sc-gone'}`, 'data-session': s.name },
      el(
        'div',
        { class: 'sc-session-head' },
        el('span', { class: 'sc-session-name' }, s.name),
        el('span', { class: 'sc-state', 'data-state': state }, s.alive ? 'running' : 'gone'),
        button('connect', 'sc-connect', 'insert "session = %flink_session connect NAME" into the notebook', () =>
          this.insertConnect(s.name)
        )
      )
    );
    if (s.error) {
      box.append(el('div', { class: 'sc-muted' }, s.error));
    }
    if (!s.alive) {
      return box;
    }
    box.append(el('div', { class: 'sc-section' }, `TaskManagers (${s.taskmanagers.length})`));
    for (const tm of s.taskmanagers) {
      box.append(
        el(
          'div',
          { class: 'sc-row sc-taskmanager', 'data-taskmanager': tm.id },
          el('span', { class: 'sc-grow' }, `TaskManager ${tm.id}`),
          el('span', { class: 'sc-muted' }, `${tm.slotsUsed}/${tm.slots} slots · ${tm.heartbeatAgo.toFixed(1)} s`)
        )
      );
    }
    box.append(el('div', { class: 'sc-section' }, `Jobs (${s.jobs.length})`));
    for (const job of s.jobs.slice(0, 30)) {
      const row = el(
        'div',
        { class: 'sc-row sc-job', 'data-job': job.jid, title: `${job.name}\n${job.jid}` },
        el('span', { class: 'sc-state', 'data-state': job.state }, job.state),
        el('span', { class: 'sc-grow' }, job.name),
        el('span', { class: 'sc-muted' }, `${job.finished}/${job.total} · ${duration(job.duration)}`),
        button('open', 'sc-open', 'open the job', () => this.openJob(s.name, job))
      );
      if (!TERMINAL.has(job.state)) {
        row.append(button('cancel', 'sc-cancel', 'cancel the job', () => void this.cancel(s.name, job)));
      }
      box.append(row);
    }
    return box;
  }

  private insertConnect(name: string): void {
    const panel = this.notebooks?.currentWidget;
    if (!panel) {
      void showErrorMessage('No notebook', `Open a notebook to insert "session = %flink_session connect ${name}".`);
      return;
    }
    NotebookActions.insertBelow(panel.content);
    panel.content.activeCell?.model.sharedModel.setSource(`session = %flink_session connect ${name}`);
    this.app.shell.activateById(panel.id);
  }

  private async cancel(name: string, job: JobRow): Promise<void> {
    const url = this.url('proxy', name, 'jobs', job.jid) + '?mode=cancel';
    const resp = await ServerConnection.makeRequest(url, { method: 'PATCH' }, this.settings);
    if (resp.status !== 202) {
      const text = await resp.text();
      void showErrorMessage(`Cancel of ${job.name}`, text);
    }
    void this.refresh();
  }

  private openJob(name: string, job: JobRow): void {
    const id = `sessioncluster-job-${job.jid}`;
    if (this.app.shell.activateById !== undefined && document.getElementById(id)) {
      this.app.shell.activateById(id);
      return;
    }
    const content = new Widget();
    content.addClass('sc-jobview');
    const frame = document.createElement('iframe');
    frame.src = `${this.url('proxy', name)}/#/jobs/${job.jid}`;
    content.node.append(frame);
    const view = new MainAreaWidget({ content });
    view.id = id;
    view.title.label = `Job: ${job.name}`;
    view.title.caption = `${name} · ${job.jid}`;
    view.title.icon = ICON;
    view.title.closable = true;
    this.app.shell.add(view, 'main');
    this.app.shell.activateById(id);
  }
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'sessioncluster-jupyterlab:plugin',
  description: 'Session clusters, their TaskManagers, jobs and tables, in the left sidebar.',
  autoStart: true,
  optional: [INotebookTracker],
  activate: (app: JupyterFrontEnd, notebooks: INotebookTracker | null) => {
    app.shell.add(new SessionsPanel(app, notebooks), 'left', { rank: 600 });
  }
};

export default plugin;
