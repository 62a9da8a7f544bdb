// The dashboard's shell: login gate, masthead (who, namespace), navigation by the URL's
// fragment (#/catalog; the server serves only `/`, apiserver/dashboard.c), one page at a time
// (a page's live lists close their watches when it goes).
import React, { Suspense, lazy, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import '@patternfly/react-core/dist/styles/base.css';
import './style.css';
import {
  Masthead,
  MastheadBrand,
  MastheadContent,
  MastheadMain,
  Nav,
  NavItem,
  NavList,
  Page,
  PageSidebar,
  PageSidebarBody,
  Button,
  FormSelect,
  FormSelectOption,
  Toolbar,
  ToolbarContent,
  ToolbarItem,
  Content,
} from '@patternfly/react-core';
import { getToken, prefetch, setToken, whoami } from './api.js';
import Login from './pages/Login.jsx';
import Gpus, { gpuLists } from './pages/Gpus.jsx';

// the other pages load when first shown (their components and styles are most of the bundle:
// tables, forms, modals); the GPU page, the heaviest to draw, comes with the shell
const Catalog = lazy(() => import('./pages/Catalog.jsx'));
const Workloads = lazy(() => import('./pages/Workloads.jsx'));
const Queues = lazy(() => import('./pages/Queues.jsx'));
const Usage = lazy(() => import('./pages/Usage.jsx'));
const Profiles = lazy(() => import('./pages/Profiles.jsx'));
const Preemptions = lazy(() => import('./pages/Preemptions.jsx'));

const PAGES = [
  ['catalog', 'Catalog', Catalog],
  ['workloads', 'My workloads', Workloads],
  ['gpus', 'GPUs', Gpus],
  ['queues', 'Queues', Queues],
  ['preemptions', 'Preemptions', Preemptions],
  ['usage', 'Usage', Usage],
  ['profiles', 'Hardware profiles', Profiles],
];

const ME = 'fatia.me';
const route = () => (window.location.hash.replace(/^#\/?/, '') || 'catalog').split('?')[0];

function App() {
  const [me, setMe] = useState(null);
  const [error, setError] = useState(null);
  const [page, setPage] = useState(route());
  const [ns, setNs] = useState('');

  const login = async (token) => {
    setToken(token);
    try {
      const who = await whoami();
      localStorage.setItem(ME, JSON.stringify(who));
      setMe(who);
      setNs((cur) => (who.admin || who.namespaces.includes(cur) ? cur : who.namespaces[0] || ''));
      setError(null);
    } catch (e) {
      setToken(null);
      localStorage.removeItem(ME);
      setMe(null);
      setError(e.status === 401 ? 'This token is not valid (401).' : String(e.message));
    }
  };
  useEffect(() => {
    const t = getToken();
    // a reload shows the pages at once with who the token was, and checks it again meanwhile
    // (the API decides every request anyway: this only chooses what the pages ask for)
    const cached = t && localStorage.getItem(ME);
    if (cached) {
      const who = JSON.parse(cached);
      setMe(who);
      setNs(who.admin ? '' : who.namespaces[0] || '');
    }
    if (t) login(t);
    const onHash = () => setPage(route());
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);

  if (!me) return <Login onLogin={login} error={error} />;

  const Cur = (PAGES.find((p) => p[0] === page) || PAGES[0])[2];
  const masthead = (
    <Masthead>
      <MastheadMain>
        <MastheadBrand>
          <Content component="h1" style={{ margin: 0 }}>
            fatia
          </Content>
        </MastheadBrand>
      </MastheadMain>
      <MastheadContent>
        <Toolbar>
          <ToolbarContent>
            <ToolbarItem>
              <FormSelect
                aria-label="namespace"
                id="ns-select"
                value={ns}
                onChange={(_e, v) => setNs(v)}
              >
                {me.admin && <FormSelectOption value="" label="all namespaces" />}
                {me.namespaces.map((n) => (
                  <FormSelectOption key={n} value={n} label={n} />
                ))}
              </FormSelect>
            </ToolbarItem>
            <ToolbarItem>
              <span id="whoami">
                {me.admin ? 'platform admin' : `tenant of ${me.namespaces.join(', ') || 'no namespace'}`}
              </span>
            </ToolbarItem>
            <ToolbarItem>
              <Button
                variant="secondary"
                onClick={() => {
                  setToken(null);
                  localStorage.removeItem(ME);
                  setMe(null);
                }}
              >
                Log out
              </Button>
            </ToolbarItem>
          </ToolbarContent>
        </Toolbar>
      </MastheadContent>
    </Masthead>
  );
  const sidebar = (
    <PageSidebar>
      <PageSidebarBody>
        <Nav>
          <NavList>
            {PAGES.map(([id, title]) => (
              <NavItem key={id} itemId={id} isActive={id === page} to={`#/${id}`}>
                {title}
              </NavItem>
            ))}
          </NavList>
        </Nav>
      </PageSidebarBody>
    </PageSidebar>
  );
  return (
    <Page masthead={masthead} sidebar={sidebar}>
      <Suspense fallback={null}>
        <Cur me={me} ns={ns} />
      </Suspense>
    </Page>
  );
}

// a returning user on the GPU page: its lists are asked for before React draws anything
try {
  const me = getToken() && JSON.parse(localStorage.getItem(ME) || 'null');
  if (me && route() === 'gpus') gpuLists(me).forEach(prefetch);
} catch {
  /* a stale cache: the page asks itself */
}

createRoot(document.getElementById('root')).render(<App />);
