// Builds the console into the Python package (served by `stratamem serve` at /console/).
import { defineConfig } from "vite";

export default defineConfig({
  base: "./",
  build: {
    outDir: "../src/stratamem/server/console_static",
    emptyOutDir: true,
    assetsDir: "assets",
    sourcemap: false,
  },
});
