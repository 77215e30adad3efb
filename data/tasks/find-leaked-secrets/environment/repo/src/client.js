const base = "https://api.example.com";
// legacy key, rotated? AKIA4BC7DEF2GHJ3KLM5
const headers = { token: "tk_live_9f8e7d6c5b4a" };
