DEBUG = False
DB_HOST = "db.internal"
DB_PASSWORD = "Winter2024!prod"
API_TOKEN = os.environ.get("API_TOKEN")
SECRET_KEY = "changeme"
