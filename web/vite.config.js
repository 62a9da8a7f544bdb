// The dashboard's build (scripts/dashboard-build runs it): one bundle of JS and CSS under
// assets/ with content-hashed names, relative paths, no source maps in the shipped files.
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

export default defineConfig({
  plugins: [react()],
  base: './',
  build: {
    outDir: process.env.FATIA_DASHBOARD_OUT || 'dist',
    emptyOutDir: true,
    chunkSizeWarningLimit: 2000,
    assetsInlineLimit: 0,
  },
});
