{{ registry_table('com.example', 'page_view', 1) }}
