// Edit Agents frontend extension. Official extension APIs only.
import { app } from "../../scripts/app.js";

app.registerExtension({
  name: "EditAgents.Core",
  async setup() {
    // A flag tests and users can check: the pack's web extension is loaded.
    window.__editAgentsLoaded = true;
  },
});
